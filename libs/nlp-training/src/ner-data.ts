import { entitySpans, itemAt, hashString, isPersonTitle } from '@loom/nlp';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConlluSentence } from './conllu.js';
import { gumFiles, readGumFile } from './gum.js';
import { normaliseTags, parseIob, type IobSentence } from './iob.js';
/** A sentence with gold IOB2 tags (types PER, ORG, LOC). */
export interface LabelledSentence {
  readonly tokens: readonly string[];
  readonly tags: readonly string[];
}

const GUM_TYPES: Record<string, string> = { person: 'PER', organization: 'ORG', place: 'LOC' };
const KEPT = new Set(['PER', 'ORG', 'LOC']);

/** Words between two proper nouns that stay inside a name ("Bank of America", "Louis van Gaal", "AT&T"; not "and": "Chuck and Gretchen" are two). */
const NAME_JOINERS = new Set(['of', 'the', 'de', 'la', 'le', 'du', 'van', 'von', 'der', 'den', 'al', 'bin', '&', '-', '.', "'"]);

/**
 * The name inside a GUM mention: the run of proper nouns around the head (joined by words such as
 * "of", "van", "&"), without the determiners, possessive endings and modifiers GUM includes, and
 * for persons without leading titles. UNER marks only the name.
 */
function nameAround(
  sentence: ConlluSentence,
  start: number,
  end: number,
  head: number,
  type: string,
): { start: number; end: number; type: string } | undefined {
  const words = sentence.words;
  const proper = (position: number): boolean => position >= start && position < end && itemAt(words, position, 'words').upos === 'PROPN';
  const joiner = (position: number): boolean => position >= start && position < end && NAME_JOINERS.has(itemAt(words, position, 'words').form.toLowerCase());
  let from = head;
  let to = head + 1;
  for (;;) {
    if (proper(from - 1)) from--;
    else if (joiner(from - 1) && proper(from - 2)) from -= 2;
    else break;
  }
  for (;;) {
    if (proper(to)) to++;
    else if (joiner(to) && proper(to + 1)) to += 2;
    else break;
  }
  if (type === 'PER') while (to - from > 1 && isPersonTitle(itemAt(words, from, 'words').form)) from++;
  return { start: from, end: to, type };
}

/** Named PER/ORG/LOC spans of a GUM sentence: entity mentions of those types whose head word is a proper noun; outermost first. */
export function gumEntities(sentence: ConlluSentence): string[] {
  const open = new Map<string, { start: number; type: string }[]>();
  const spans: { start: number; end: number; type: string }[] = [];
  sentence.words.forEach((word, position) => {
    const match = /(?:^|\|)Entity=([^|]*)/.exec(word.misc);
    if (!match) return;
    const entityPattern = /\((\d+)-([a-z]+)([^()]*)(\))?|(\d+)\)/g;
    for (let entity = entityPattern.exec(itemAt(match, 1, 'match')); entity !== null; entity = entityPattern.exec(itemAt(match, 1, 'match'))) {
      if (entity[1] !== undefined) {
        if (entity[4]) spans.push({ start: position, end: position + 1, type: itemAt(entity, 2, 'entity') });
        else {
          const list = open.get(entity[1]) ?? [];
          list.push({ start: position, type: itemAt(entity, 2, 'entity') });
          open.set(entity[1], list);
        }
      } else {
        const list = open.get(itemAt(entity, 5, 'entity'));
        const opened = list?.pop();
        if (opened) spans.push({ start: opened.start, end: position + 1, type: opened.type });
      }
    }
  });
  const tags: string[] = sentence.words.map(() => 'O');
  const named = spans
    .map((span) => {
      const type = GUM_TYPES[span.type];
      if (type === undefined) return undefined;
      // the head: the word of the span whose head lies outside it
      const head = sentence.words.findIndex(
        (word, position) => position >= span.start && position < span.end && (word.head - 1 < span.start || word.head - 1 >= span.end),
      );
      if (head < 0 || itemAt(sentence.words, head, 'sentence.words').upos !== 'PROPN') return undefined;
      // a group named by a plural proper noun ("Jews", "Israelis") is a GUM person but no UNER entity
      if (span.type === 'person' && span.end - span.start === 1 && itemAt(sentence.words, head, 'sentence.words').xpos === 'NNPS') return undefined;
      return nameAround(sentence, span.start, span.end, head, type);
    })
    .filter((span) => span !== undefined)
    .sort((left, right) => right.end - right.start - (left.end - left.start));
  for (const span of named) {
    if (tags.slice(span.start, span.end).some((tag) => tag !== 'O')) continue;
    for (let position = span.start; position < span.end; position++) tags[position] = `${position === span.start ? 'B' : 'I'}-${span.type}`;
  }
  return tags;
}

/**
 * BTC tags a user mention's `@` and its name each B-PER; UNER has no such entities. The `@`
 * becomes O so that the tagger does not learn B-PER B-PER for one name.
 */
function withoutMentionSigns(tokens: readonly string[], tags: readonly string[]): string[] {
  return tags.map((tag, position) => (tokens[position] === '@' ? 'O' : tag));
}

function keepTypes(tags: readonly string[]): string[] {
  return normaliseTags(tags.map((tag) => (tag === 'O' || KEPT.has(tag.slice(2)) ? tag : 'O')));
}

/** Leading titles of PER spans become O, as UNER marks them ("Dr. [Dorn]"). */
export function withoutTitles(tokens: readonly string[], tags: readonly string[]): string[] {
  const out = [...tags];
  for (const span of entitySpans(tags)) {
    if (span.type !== 'PER') continue;
    let from = span.start;
    while (span.end - from > 1 && isPersonTitle(itemAt(tokens, from, 'tokens'))) out[from++] = 'O';
    if (from > span.start) out[from] = 'B-PER';
  }
  return out;
}

/** The open NER training sets under `ner/`. */
export type OpenNerSet = 'gum' | 'wikigold' | 'btc';

/** The open NER training sets under `ner/` that `sets` names, in that order: GUM (open genres), WikiGold, Broad Twitter Corpus. */
export function openNerExamples(dataDir: string, sets: readonly OpenNerSet[] = ['gum', 'wikigold', 'btc']): { examples: LabelledSentence[]; files: string[] } {
  const examples: LabelledSentence[] = [];
  const files: string[] = [];
  for (const file of sets.includes('gum') ? gumFiles(dataDir) : []) {
    files.push(file);
    for (const sentence of readGumFile(dataDir, file)) examples.push({ tokens: sentence.words.map((word) => word.form), tags: gumEntities(sentence) });
  }
  if (sets.includes('wikigold')) {
    files.push(join('ner', 'wikigold', 'wikigold.conll'));
    for (const sentence of parseIob(readFileSync(join(dataDir, 'ner', 'wikigold', 'wikigold.conll'), 'utf8'), { source: 'wikigold.conll', scheme: 'iob1' })) {
      examples.push({ tokens: sentence.tokens, tags: withoutTitles(sentence.tokens, keepTypes(sentence.tags)) });
    }
  }
  const btcDir = join(dataDir, 'ner', 'btc');
  for (const file of sets.includes('btc')
    ? readdirSync(btcDir)
        .filter((name) => name.endsWith('.conll'))
        .sort()
    : []) {
    files.push(join('ner', 'btc', file));
    for (const sentence of parseIob(readFileSync(join(btcDir, file), 'utf8'), { source: file }))
      examples.push({ tokens: sentence.tokens, tags: withoutTitles(sentence.tokens, keepTypes(withoutMentionSigns(sentence.tokens, sentence.tags))) });
  }
  return { examples, files };
}

/** UNER file under the data directory. */
export const UNER_DEV = join('uner-english-ewt', 'en_ewt-ud-dev.iob2');

/** Every how-many-th UNER document is held out from training for evaluation. */
export const UNER_HELD_OUT_EVERY = 4;

/** The UNER document of a sentence: its sent_id without the `-NNNN` suffix. */
export function unerDocument(sentence: { readonly sentId: string | undefined }): string {
  return (sentence.sentId ?? '').replace(/-\d+$/, '');
}

/** Sentences grouped by UNER document (`unerDocument`), consecutive sentences of one document together, in order. */
export function unerDocuments<Sentence extends { readonly sentId: string | undefined }>(sentences: readonly Sentence[]): Sentence[][] {
  const documents: Sentence[][] = [];
  let current = '';
  for (const sentence of sentences) {
    const document = unerDocument(sentence);
    if (documents.length === 0 || document !== current) documents.push([]);
    documents[documents.length - 1]!.push(sentence);
    current = document;
  }
  return documents;
}

/**
 * UNER English EWT dev split by document (in file order): document i is held out for evaluation
 * when i % every === every - 1, the others are training data. A document is a sent_id without its
 * `-NNNN` suffix.
 */
export function unerSplit(dataDir: string, every = UNER_HELD_OUT_EVERY): { train: IobSentence[]; heldOut: IobSentence[] } {
  const sentences = parseIob(readFileSync(join(dataDir, UNER_DEV), 'utf8'), { source: UNER_DEV });
  const docs: string[] = [];
  const train: IobSentence[] = [];
  const heldOut: IobSentence[] = [];
  for (const sentence of sentences) {
    const doc = unerDocument(sentence);
    if (docs[docs.length - 1] !== doc) docs.push(doc);
    ((docs.length - 1) % every === every - 1 ? heldOut : train).push(sentence);
  }
  return { train, heldOut };
}

/** Shares of training sentences that get an all-capitals copy (`upper`) or an all-lower-case copy (`lower`). */
export interface CaseCopyShares {
  readonly upper: number;
  readonly lower: number;
}

/**
 * Case-changed copies of some sentences, for tagging web text written in capitals or without them: a sentence
 * whose hash falls in the first `upper` share is copied in capitals, one in the last `lower` share in lower case
 * (the tags stay). The choice depends only on the sentence's words, so it is the same on every run.
 */
export function caseCopies(sentences: readonly LabelledSentence[], shares: CaseCopyShares): LabelledSentence[] {
  if (shares.upper < 0 || shares.lower < 0 || shares.upper + shares.lower > 1)
    throw new RangeError(`case copy shares upper ${shares.upper} and lower ${shares.lower} must be at least 0 and add up to at most 1`);
  const out: LabelledSentence[] = [];
  for (const sentence of sentences) {
    const share = (Math.abs(hashString(sentence.tokens.join(' '))) % 1000) / 1000;
    if (share < shares.upper) out.push({ tokens: sentence.tokens.map((token) => token.toUpperCase()), tags: sentence.tags });
    else if (share >= 1 - shares.lower) out.push({ tokens: sentence.tokens.map((token) => token.toLowerCase()), tags: sentence.tags });
  }
  return out;
}
