import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EWT_TRAIN, readEwt } from './ewt.js';
import { openNerExamples, unerSplit, type OpenNerSet } from './ner-data.js';

/** How often a word appears capitalised inside sentences, and how often at all. */
interface CaseCount {
  capitalised: number;
  allCapitals: number;
  total: number;
}

/** A word seen fewer times than this inside sentences gets no class. */
const MIN_OCCURRENCES = 3;
/** A word seen this often or more is a common one. */
const COMMON_OCCURRENCES = 20;

/** Unlabelled text the word classes are learned from: the NASA lesson's text, public domain (textrank/). */
export const NASA_TEXT = join('textrank', 'nasa-lesson-164448.txt');

/** Counts the case of words in sentences of tokens; a sentence's first word and words without a letter first are not counted. */
export class CaseCounts {
  private readonly counts = new Map<string, CaseCount>();

  /** Counts the words of a sentence after its first. */
  addSentence(tokens: readonly string[]): void {
    for (let position = 1; position < tokens.length; position++) {
      const token = tokens[position]!;
      if (!/^\p{L}/u.test(token)) continue;
      const key = token.toLowerCase();
      let count = this.counts.get(key);
      if (!count) this.counts.set(key, (count = { capitalised: 0, allCapitals: 0, total: 0 }));
      count.total++;
      if (/^\p{Lu}/u.test(token)) count.capitalised++;
      if (token.length > 1 && token === token.toUpperCase() && token !== key) count.allCapitals++;
    }
  }

  /**
   * Lower-cased word → its class: how often it is written capitalised inside a sentence (`lower` under 5 %,
   * `mostly-lower` under half, `mostly-capital` under 95 %, `capital`; `acronym` when written in capitals half the
   * time), `-rare` when seen fewer than COMMON_OCCURRENCES times; words seen fewer than MIN_OCCURRENCES times have none.
   */
  classes(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [word, { capitalised, allCapitals, total }] of this.counts) {
      if (total < MIN_OCCURRENCES) continue;
      const share = capitalised / total;
      const shape =
        allCapitals / total >= 0.5 ? 'acronym' : share < 0.05 ? 'lower' : share < 0.5 ? 'mostly-lower' : share < 0.95 ? 'mostly-capital' : 'capital';
      out.set(word, total < COMMON_OCCURRENCES ? `${shape}-rare` : shape);
    }
    return out;
  }
}

/** Sentences of plain text: split after `.`, `!` or `?` followed by white space, tokens at white space and punctuation. */
export function plainTextSentences(text: string): string[][] {
  return text
    .split(/(?<=[.!?])\s+/)
    .map((sentence) => sentence.match(/[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*|[^\s\p{L}\p{N}]/gu) ?? [])
    .filter((tokens) => tokens.length > 0);
}

/**
 * The NER tagger's word classes, learned from the text of the data it may read, never from held-out documents: how
 * often each word is written capitalised inside a sentence in EWT train, the open NER training sets, UNER's training
 * documents and the NASA lesson (`CaseCounts.classes`). A name is mostly capitalised wherever it appears; the class
 * tells the tagger so for a word at a sentence's start, in a title, or in text written in capitals or lower case.
 */
export function trainingWordClasses(dataDir: string, openSets: readonly OpenNerSet[]): Map<string, string> {
  const counts = new CaseCounts();
  for (const sentence of readEwt(dataDir, EWT_TRAIN)) counts.addSentence(sentence.words.map((word) => word.form));
  for (const sentence of openNerExamples(dataDir, openSets).examples) counts.addSentence(sentence.tokens);
  for (const sentence of unerSplit(dataDir).train) counts.addSentence(sentence.tokens);
  for (const sentence of plainTextSentences(readFileSync(join(dataDir, NASA_TEXT), 'utf8'))) counts.addSentence(sentence);
  return counts.classes();
}
