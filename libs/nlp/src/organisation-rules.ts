import { entitySpans } from './entity-spans.js';

/**
 * Company suffixes that end an organisation's name, after an optional comma ("Google, Inc.", "Enron Corp."), as
 * written, capitalised and in capitals: matched without lower-casing every word of every sentence.
 */
const COMPANY_SUFFIXES = new Set(
  ['inc', 'inc.', 'corp', 'corp.', 'co.', 'ltd', 'ltd.', 'llc', 'l.l.c.', 'llp', 'plc', 'GmbH', 'ag', 'l.p.'].flatMap((suffix) => [
    suffix,
    `${suffix[0]!.toUpperCase()}${suffix.slice(1)}`,
    suffix.toUpperCase(),
  ]),
);

/**
 * Head nouns (capitalised) that make a capitalised name an organisation ("Foreign Policy Council", "Acme Systems"), chosen where
 * the UNER annotators tag them ORG nearly always; ambiguous ones ("Bank", "Office", "School", "News") are left out.
 */
const ORGANISATION_HEADS = new Set([
  'Council',
  'Systems',
  'Technologies',
  'Association',
  'Department',
  'Commission',
  'Authority',
  'Agency',
  'Foundation',
  'Corporation',
  'Committee',
  'Ministry',
  'Institute',
  'Airlines',
  'Laboratories',
  'Federation',
  'Coalition',
]);

/** An acronym: two to ten capitals, with full stops or an ampersand between them ("HANO", "AT&T", "U.N."). */
const ACRONYM = /^\p{Lu}[\p{Lu}&.]{1,9}$/u;

/** Words joining a head to what it governs: "Council on Foreign Relations", "Authority of New Orleans". */
const HEAD_JOINERS = new Set(['of', 'on', 'for']);

/** Parts of speech a word of a name may have (a sentence's first "The" is capitalised but no part of one). */
const NAME_PARTS = new Set(['PROPN', 'NOUN', 'ADJ', 'NUM', 'X']);

/**
 * Marks organisations by their form where the tagger missed them or cut them short (issue 54, Must 2):
 * - a capitalised name before a company suffix ("Constellation Power Source, Inc.") is an organisation, the
 *   suffix and its comma included;
 * - a capitalised name of two words or more ending in an organisation head ("Housing Authority", "Acme Systems")
 *   is an organisation, whatever type the tagger gave its words;
 * - an organisation ending in a head takes in "of", "on" or "for" and the capitalised name after it ("Council on
 *   Foreign Relations", "Housing Authority of New Orleans");
 * - an acronym in brackets right after an organisation is one too ("… of New Orleans (HANO)").
 * Reads each token's joint tagger label (`PROPN\tNNP`); returns new IOB2 tags, `tags` unchanged.
 */
export function markOrganisations(tokens: readonly string[], tags: readonly string[], labels: readonly string[]): string[] {
  const out = [...tags];
  const namePart = (position: number): boolean => {
    const token = tokens[position];
    return token !== undefined && /^\p{Lu}/u.test(token) && NAME_PARTS.has(labels[position]?.split('\t')[0] ?? '');
  };
  const number = (position: number): boolean => /^\d+$/.test(tokens[position] ?? '');
  // a person the tagger found before a company ends the run: a signature's "Traci Warner Enron Broadband Services, Inc."
  const person = (position: number): boolean => out[position]?.endsWith('-PER') === true;
  /** The first position of the capitalised run ending at `last`. */
  const runStart = (last: number): number => {
    let start = last;
    while (start > 0 && !person(start - 1) && (namePart(start - 1) || number(start - 1) || (tokens[start - 1] === '&' && namePart(start - 2)))) start--;
    // a number inside a name ("Sept. 11 Commission") but not before it ("2004 Commission")
    while (start < last && number(start)) start++;
    return start;
  };
  /** Tags start..end (exclusive) as one organisation, taking in whole any entity it overlaps. */
  const mark = (start: number, end: number): void => {
    let from = start;
    let to = end;
    for (const span of entitySpans(out)) {
      if (span.start < to && from < span.end) {
        from = Math.min(from, span.start);
        to = Math.max(to, span.end);
      }
    }
    for (let position = from; position < to; position++) out[position] = position === from ? 'B-ORG' : 'I-ORG';
  };
  for (let position = 0; position < tokens.length; position++) {
    const token = tokens[position]!;
    if (COMPANY_SUFFIXES.has(token) && position > 0) {
      const last = tokens[position - 1] === ',' ? position - 2 : position - 1;
      if (last >= 0 && namePart(last)) mark(runStart(last), position + 1);
      continue;
    }
    if (ORGANISATION_HEADS.has(token) && namePart(position)) {
      const start = runStart(position);
      if (start < position || out[position] !== 'O') {
        let end = position + 1;
        if (HEAD_JOINERS.has(tokens[end] ?? '') && namePart(end + 1)) {
          end += 2;
          while (namePart(end)) end++;
        }
        mark(start, end);
      }
    }
  }
  // an acronym in brackets right after an organisation names it: "Housing Authority of New Orleans ( HANO )"
  for (const span of entitySpans(out)) {
    const acronym = tokens[span.end + 1];
    if (span.type === 'ORG' && tokens[span.end] === '(' && tokens[span.end + 2] === ')' && acronym !== undefined && ACRONYM.test(acronym))
      out[span.end + 1] = 'B-ORG';
  }
  return out;
}
