import { entitySpans } from './entity-spans.js';
import { isPersonTitle } from './person-titles.js';

/** A sentence of a document: its tokens, IOB2 entity tags and, when known, the tokens' joint tagger labels (`PROPN\tNNP`). */
export interface DocumentSentence {
  readonly tokens: readonly string[];
  readonly tags: readonly string[];
  readonly labels?: readonly string[];
}

/**
 * Types whose names keep their type across a document. Not places: out of fold on the UNER training documents, places
 * spread so lost precision (LOC F1 68.67 -> 68.27) where persons and organisations gained (docs/decisions.md).
 */
const CONSISTENT_TYPES = new Set(['PER', 'ORG']);

/** The most tokens of a name looked for again elsewhere in the document. */
const LONGEST_NAME = 6;

/** True when a word starts with a capital letter. */
function capitalised(word: string): boolean {
  return /^\p{Lu}/u.test(word);
}

/** A surname: a capital then a lower-case letter ("Allawi", "McDonald"), no title ("Mr"), no initial. */
function surname(word: string): boolean {
  return /^\p{Lu}\p{Ll}/u.test(word) && !isPersonTitle(word);
}

/** True when token `position` is a proper noun (by its label); true without labels. */
function properNoun(sentence: DocumentSentence, position: number): boolean {
  return sentence.labels === undefined || sentence.labels[position]?.startsWith('PROPN') === true;
}

/** True when token `position` is an untagged capitalised proper noun: the part of a longer name nothing tagged. */
function untaggedName(sentence: DocumentSentence, position: number): boolean {
  const token = sentence.tokens[position];
  return token !== undefined && sentence.tags[position] === 'O' && capitalised(token) && properNoun(sentence, position);
}

/**
 * The names of persons and organisations a document's tags mark, as written (tokens joined by a space) → the type most of their mentions have
 * (none when two types tie), and a person's surname after a given name ("Iyad Allawi" gives "Allawi") as a person.
 */
function documentNames(sentences: readonly DocumentSentence[]): Map<string, string> {
  const counts = new Map<string, Map<string, number>>();
  const count = (name: string, type: string): void => {
    let types = counts.get(name);
    if (!types) counts.set(name, (types = new Map<string, number>()));
    types.set(type, (types.get(type) ?? 0) + 1);
  };
  for (const sentence of sentences) {
    for (const span of entitySpans(sentence.tags)) {
      const first = sentence.tokens[span.start]!;
      if (!capitalised(first) || span.end - span.start > LONGEST_NAME || !CONSISTENT_TYPES.has(span.type)) continue;
      count(sentence.tokens.slice(span.start, span.end).join(' '), span.type);
      const last = sentence.tokens[span.end - 1]!;
      if (span.type === 'PER' && span.end - span.start > 1 && surname(last)) count(last, 'PER');
    }
  }
  const names = new Map<string, string>();
  for (const [name, types] of counts) {
    const ranked = [...types].sort((left, right) => right[1] - left[1]);
    const [best, second] = ranked;
    if (best && (second === undefined || second[1] < best[1])) names.set(name, best[0]);
  }
  return names;
}

/** An acronym as written: two or more capital letters ("HANO", "UN"). */
const ACRONYM = /^\p{Lu}{2,}$/u;

/**
 * A document's sentences with the acronyms it defines typed as what they name at every one-word mention: an acronym in
 * brackets right after an organisation's name ("the Housing Authority of New Orleans (HANO)") is that organisation where
 * the tagger typed it otherwise alone ("HANO has not replied" read as a person). Other sentences are returned as they are.
 */
function withDefinedAcronyms(sentences: readonly DocumentSentence[]): readonly DocumentSentence[] {
  const defined = new Set<string>();
  for (const { tokens, tags } of sentences)
    for (let position = 2; position + 1 < tokens.length; position++)
      if (
        tokens[position - 1] === '(' &&
        tokens[position + 1] === ')' &&
        ACRONYM.test(tokens[position]!) &&
        tags[position] === 'B-ORG' &&
        tags[position - 2]?.endsWith('-ORG') === true
      )
        defined.add(tokens[position]!);
  if (defined.size === 0) return sentences;
  return sentences.map((sentence) => {
    const { tokens, tags } = sentence;
    const alone = (position: number): boolean =>
      defined.has(tokens[position]!) && /^B-(PER|LOC)$/.test(tags[position]!) && tags[position + 1]?.startsWith('I-') !== true;
    if (!tokens.some((_, position) => alone(position))) return sentence;
    return { ...sentence, tags: tags.map((tag, position) => (alone(position) ? 'B-ORG' : tag)) };
  });
}

/**
 * A document's entity tags made consistent (issue 54): a person's or an organisation's name the tagger or the rules
 * found at one mention keeps its type at the mentions they left untagged ("the Housing Authority of New Orleans (HANO)" … "HANO has not provided"),
 * and a person's surname found after a given name is that person where it stands alone ("Prime Minister Iyad Allawi"
 * … "Allawi 's cousin"). Only untagged words change, and only where the mention is written as the name was (case
 * included), does not continue an untagged proper noun on either side (it would be part of a longer name: "St.
 * Thomas"), and, for one word, is a proper noun. An acronym the text defines after an organisation's name is that
 * organisation at its one-word mentions typed otherwise (`withDefinedAcronyms`). Returns new tags, one list a sentence.
 */
export function harmoniseDocumentTags(given: readonly DocumentSentence[]): string[][] {
  const sentences = withDefinedAcronyms(given);
  const out = sentences.map((sentence) => [...sentence.tags]);
  if (sentences.length === 0) return out;
  const names = documentNames(sentences);
  if (names.size === 0) return out;
  const firstWords = new Set([...names.keys()].map((name) => name.split(' ', 1)[0]!));
  sentences.forEach((sentence, index) => {
    const tags = out[index]!;
    const { tokens } = sentence;
    for (let position = 0; position < tokens.length; position++) {
      if (tags[position] !== 'O' || !firstWords.has(tokens[position]!) || untaggedName(sentence, position - 1)) continue;
      for (let length = Math.min(LONGEST_NAME, tokens.length - position); length >= 1; length--) {
        const end = position + length;
        const type = names.get(tokens.slice(position, end).join(' '));
        if (type === undefined || tags.slice(position, end).some((tag) => tag !== 'O') || untaggedName(sentence, end)) continue;
        if (length === 1 && !properNoun(sentence, position)) continue;
        for (let at = position; at < end; at++) tags[at] = `${at === position ? 'B' : 'I'}-${type}`;
        position = end - 1;
        break;
      }
    }
  });
  return out;
}
