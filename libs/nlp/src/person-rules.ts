import { entitySpans, type EntitySpan } from './entity-spans.js';
import { isPersonTitle } from './person-titles.js';

/** Words that name a storm before its (person's) name: "Hurricane Katrina" is no person. */
const STORMS = new Set(['Hurricane', 'Typhoon', 'Cyclone', 'Storm', 'HURRICANE', 'TYPHOON', 'CYCLONE', 'STORM']);

/** Words between the entities of a list: "Mosul , Baiji , and Tuz", "San Jose , Palo Alto , San Francisco". */
const LIST_SEPARATORS = new Set([',', 'and', 'or', '&', '/']);

/** True when tokens [from, to) are one or two list separators. */
function separates(tokens: readonly string[], from: number, to: number): boolean {
  if (to - from < 1 || to - from > 2) return false;
  for (let position = from; position < to; position++) if (!LIST_SEPARATORS.has(tokens[position]!)) return false;
  return true;
}

/** The other entities of the list a span stands in (entities joined only by separators), in order. */
function listNeighbours(tokens: readonly string[], spans: readonly EntitySpan[], index: number): EntitySpan[] {
  const out: EntitySpan[] = [];
  for (let at = index - 1; at >= 0 && separates(tokens, spans[at]!.end, spans[at + 1]!.start); at--) out.push(spans[at]!);
  for (let at = index + 1; at < spans.length && separates(tokens, spans[at - 1]!.end, spans[at]!.start); at++) out.push(spans[at]!);
  return out;
}

/**
 * Corrects what the tagger took for a person (issue 54) where the sentence says otherwise:
 * - a storm's name is no person ("Hurricane Katrina");
 * - a title phrase ("Minister of Defense") tagged as a person is a title: the capitalised proper nouns right after it
 *   are the person ("Minister of Defense [Hazem Shaalan]"), as UNER marks them;
 * - a "person" in a list of two or more places and nothing else is a place ("Mosul , Baiji , and Tuz").
 * `labels` are the tokens' joint tagger labels; without them the title rule takes no name after the title. Returns new
 * tags; `tags` is not changed.
 */
export function correctPersons(tokens: readonly string[], tags: readonly string[], labels?: readonly string[]): string[] {
  const out = [...tags];
  const spans = entitySpans(tags);
  spans.forEach((span, index) => {
    if (span.type !== 'PER') return;
    const first = tokens[span.start]!;
    if (STORMS.has(first)) {
      for (let position = span.start; position < span.end; position++) out[position] = 'O';
      return;
    }
    if (isPersonTitle(first) && tokens.slice(span.start + 1, span.end).includes('of')) {
      for (let position = span.start; position < span.end; position++) out[position] = 'O';
      let end = span.end;
      while (end < tokens.length && tags[end] === 'O' && labels?.[end]?.startsWith('PROPN') === true && /^\p{Lu}\p{Ll}/u.test(tokens[end]!)) end++;
      for (let position = span.end; position < end; position++) out[position] = position === span.end ? 'B-PER' : 'I-PER';
      return;
    }
    const neighbours = listNeighbours(tokens, spans, index);
    if (neighbours.length >= 2 && neighbours.every((neighbour) => neighbour.type === 'LOC'))
      for (let position = span.start; position < span.end; position++) out[position] = position === span.start ? 'B-LOC' : 'I-LOC';
  });
  return out;
}
