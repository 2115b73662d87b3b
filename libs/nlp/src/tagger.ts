import { feature, random, shuffle } from './hashing.js';
import { hashString } from './hashing.js';
import { START, wordCodes, type WordCodes } from './features.js';
import { Perceptron } from './perceptron.js';

/**
 * A trained part-of-speech tagger: joint UPOS+XPOS labels, an ambiguity-class lexicon and frequent
 * unambiguous words. Two greedy left-to-right passes: the second also sees the first pass's tags
 * of the next two words, which a single left-to-right pass cannot.
 */
export interface TaggerModel {
  /** First pass (left context only). */
  readonly perceptron: Perceptron;
  /** Second pass (also the first pass's tags to the right). */
  readonly second: Perceptron;
  /** The second pass runs only where the first pass's best score leads the next by less than this. */
  readonly secondPassMargin: number;
  /** Joint labels `UPOS\tXPOS`. */
  readonly labels: readonly string[];
  /** Lower-cased word → hash of the set of labels it takes (its ambiguity class). */
  readonly ambiguity: ReadonlyMap<string, number>;
  /** Word form → the label it always takes (frequent and unambiguous in training). */
  readonly unambiguous: ReadonlyMap<string, number>;
}

/** A training sentence: word forms and their joint label indices. */
export interface TaggedSentence {
  readonly words: readonly string[];
  readonly labels: readonly number[];
}

export interface TaggerTrainOptions {
  readonly epochs: number;
  /** See TaggerModel.secondPassMargin. */
  readonly secondPassMargin: number;
  readonly seed: number;
  readonly bits: number;
  /** Called after each epoch (for progress logs). */
  readonly onEpoch?: (epoch: number, trainAccuracy: number) => void;
}

const MAX_FEATURES = 64;
/** A word's ambiguity class holds the labels of at least this share of its occurrences… */
const AMBIGUITY_MIN_SHARE = 0.05;
/** …and a word seen fewer times than this has none. */
const AMBIGUITY_MIN_COUNT = 2;
/** A form is unambiguous when seen at least this often… */
const UNAMBIGUOUS_MIN_COUNT = 20;
/** …with one label at least this share of the time. */
const UNAMBIGUOUS_MIN_SHARE = 0.995;

function ambiguityCodes(words: readonly string[], ambiguity: ReadonlyMap<string, number>): Int32Array {
  const codes = new Int32Array(words.length + 2).fill(hashString('<END>'));
  for (let i = 0; i < words.length; i++) codes[i] = ambiguity.get(words[i]!.toLowerCase()) ?? UNKNOWN_CLASS;
  return codes;
}

const UNKNOWN_CLASS = hashString('<UNK-CLASS>');

/** The code at position j, or the start marker before the sentence. */
function before(a: Int32Array, j: number): number {
  return j < 0 ? START : a[j]!;
}

function extract(c: WordCodes, amb: Int32Array, i: number, p1: number, p2: number, out: Int32Array): number {
  let n = 0;
  const w = c.lower[i]!;
  out[n++] = feature(1, 0);
  out[n++] = feature(2, w);
  out[n++] = feature(3, c.form[i]!);
  out[n++] = feature(4, c.suffix1[i]!);
  out[n++] = feature(5, c.suffix2[i]!);
  out[n++] = feature(6, c.suffix3[i]!);
  out[n++] = feature(7, c.suffix4[i]!);
  out[n++] = feature(8, c.prefix1[i]!);
  out[n++] = feature(9, c.prefix2[i]!);
  out[n++] = feature(10, c.prefix3[i]!);
  out[n++] = feature(11, c.shape[i]!);
  out[n++] = feature(12, p1);
  out[n++] = feature(13, p2);
  out[n++] = feature(14, p1, p2);
  out[n++] = feature(15, p1, w);
  out[n++] = feature(16, before(c.lower, i - 1));
  out[n++] = feature(17, before(c.suffix3, i - 1));
  out[n++] = feature(18, before(c.lower, i - 2));
  out[n++] = feature(19, c.lower[i + 1]!);
  out[n++] = feature(20, c.suffix3[i + 1]!);
  out[n++] = feature(21, c.lower[i + 2]!);
  out[n++] = feature(22, amb[i]!);
  out[n++] = feature(23, amb[i + 1]!);
  out[n++] = feature(24, amb[i + 2]!);
  out[n++] = feature(25, w, c.lower[i + 1]);
  out[n++] = feature(26, before(c.lower, i - 1), w);
  out[n++] = feature(27, p1, amb[i]);
  out[n++] = feature(28, amb[i]!, amb[i + 1]);
  out[n++] = feature(29, c.shape[i + 1]!);
  out[n++] = feature(30, p1, c.suffix3[i]);
  out[n++] = feature(31, before(c.shape, i - 1), c.shape[i]);
  out[n++] = feature(32, p1, amb[i + 1]);
  out[n++] = feature(33, c.suffix2[i]!, c.shape[i]);
  out[n++] = feature(34, p1, c.lower[i + 1]);
  out[n++] = feature(35, before(c.lower, i - 1), c.lower[i + 1]);
  out[n++] = feature(36, c.suffix4[i + 1]!);
  out[n++] = feature(37, c.prefix3[i + 1]!);
  out[n++] = feature(38, before(c.shape, i - 1), i === 0 ? 1 : 0, c.shape[i]);
  out[n++] = feature(39, c.suffix5[i]!);
  out[n++] = feature(40, w, amb[i + 1]);
  out[n++] = feature(41, p1, p2, w);
  out[n++] = feature(42, c.lower[i + 1]!, c.lower[i + 2]);
  out[n++] = feature(43, before(c.suffix2, i - 1), c.suffix2[i]);
  return n;
}

/** Features of the second pass: those of the first plus the first pass's tags at i+1 and i+2. */
function extractSecond(c: WordCodes, amb: Int32Array, first: readonly number[], i: number, p1: number, p2: number, out: Int32Array): number {
  let n = extract(c, amb, i, p1, p2, out);
  const r1 = first[i + 1] ?? NO_TAG;
  const r2 = first[i + 2] ?? NO_TAG;
  out[n++] = feature(60, r1);
  out[n++] = feature(61, r1, r2);
  out[n++] = feature(62, p1, r1);
  out[n++] = feature(63, c.lower[i]!, r1);
  out[n++] = feature(64, c.suffix3[i]!, r1);
  out[n++] = feature(65, amb[i]!, r1);
  out[n++] = feature(66, p1, r1, amb[i]);
  return n;
}

const NO_TAG = -1;

/** The first pass over one sentence (word codes prepared by the caller); `margins[i]` gets how far the best tag leads the next (Infinity for lexicon words). */
function firstPass(
  perceptron: Perceptron,
  unambiguous: ReadonlyMap<string, number>,
  words: readonly string[],
  c: WordCodes,
  amb: Int32Array,
  margins?: Float32Array,
): number[] {
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(perceptron.classes);
  const out: number[] = [];
  for (let i = 0; i < words.length; i++) {
    const known = unambiguous.get(words[i]!);
    if (known !== undefined) {
      out.push(known);
      if (margins) margins[i] = Infinity;
      continue;
    }
    const n = extract(c, amb, i, out[i - 1] ?? NO_TAG, out[i - 2] ?? NO_TAG, feats);
    perceptron.score(feats, n, scores);
    const best = Perceptron.best(scores);
    out.push(best);
    if (margins) {
      let next = -Infinity;
      for (let k = 0; k < scores.length; k++) if (k !== best && scores[k]! > next) next = scores[k]!;
      margins[i] = scores[best]! - next;
    }
  }
  return out;
}

/** Tags one sentence; returns joint label indices. */
export function tagWords(model: TaggerModel, words: readonly string[]): number[] {
  const c = wordCodes(words);
  const amb = ambiguityCodes(words, model.ambiguity);
  const margins = new Float32Array(words.length);
  const first = firstPass(model.perceptron, model.unambiguous, words, c, amb, margins);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(model.labels.length);
  const out: number[] = [];
  for (let i = 0; i < words.length; i++) {
    // A confident first-pass tag is kept: the second pass rarely changes it and costs as much again.
    if (margins[i]! >= model.secondPassMargin) {
      out.push(first[i]!);
      continue;
    }
    const n = extractSecond(c, amb, first, i, out[i - 1] ?? NO_TAG, out[i - 2] ?? NO_TAG, feats);
    model.second.score(feats, n, scores);
    out.push(Perceptron.best(scores));
  }
  return out;
}

/** Builds the ambiguity-class and unambiguous-word lexicons from training sentences. */
export function buildLexicons(sentences: readonly TaggedSentence[]): {
  ambiguity: Map<string, number>;
  unambiguous: Map<string, number>;
  ambiguityText: Map<string, string>;
} {
  const byLower = new Map<string, Map<number, number>>();
  const byForm = new Map<string, Map<number, number>>();
  const count = (m: Map<string, Map<number, number>>, key: string, label: number): void => {
    let inner = m.get(key);
    if (!inner) m.set(key, (inner = new Map<number, number>()));
    inner.set(label, (inner.get(label) ?? 0) + 1);
  };
  for (const s of sentences) {
    s.words.forEach((w, i) => {
      count(byLower, w.toLowerCase(), s.labels[i]!);
      count(byForm, w, s.labels[i]!);
    });
  }
  const ambiguityText = new Map<string, string>();
  for (const [word, labels] of byLower) {
    let total = 0;
    for (const n of labels.values()) total += n;
    if (total < AMBIGUITY_MIN_COUNT) continue;
    const kept = [...labels]
      .filter(([, n]) => n / total >= AMBIGUITY_MIN_SHARE)
      .map(([l]) => l)
      .sort((a, b) => a - b);
    ambiguityText.set(word, kept.join(','));
  }
  const ambiguity = new Map([...ambiguityText].map(([w, t]) => [w, hashString(t)]));
  const unambiguous = new Map<string, number>();
  for (const [form, labels] of byForm) {
    let total = 0;
    let best = -1;
    let bestCount = 0;
    for (const [l, n] of labels) {
      total += n;
      if (n > bestCount) {
        bestCount = n;
        best = l;
      }
    }
    if (total >= UNAMBIGUOUS_MIN_COUNT && bestCount / total >= UNAMBIGUOUS_MIN_SHARE) unambiguous.set(form, best);
  }
  return { ambiguity, unambiguous, ambiguityText };
}

interface Prepared {
  readonly c: WordCodes;
  readonly amb: Int32Array;
}

/** One greedy pass trained over `epochs`; `rightTags` (per sentence) switches to second-pass features. */
function trainPass(
  sentences: readonly TaggedSentence[],
  prepared: readonly Prepared[],
  classes: number,
  options: TaggerTrainOptions,
  rightTags?: readonly (readonly number[])[],
): Perceptron {
  const perceptron = new Perceptron(classes, options.bits);
  const next = random(options.seed);
  const order = sentences.map((_, i) => i);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(classes);
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    shuffle(order, next);
    let right = 0;
    let total = 0;
    for (const k of order) {
      const s = sentences[k]!;
      const p = prepared[k]!;
      const history: number[] = [];
      for (let i = 0; i < s.words.length; i++) {
        const gold = s.labels[i]!;
        const p1 = history[i - 1] ?? NO_TAG;
        const p2 = history[i - 2] ?? NO_TAG;
        const n = rightTags ? extractSecond(p.c, p.amb, rightTags[k]!, i, p1, p2, feats) : extract(p.c, p.amb, i, p1, p2, feats);
        perceptron.tick();
        perceptron.score(feats, n, scores);
        const guess = Perceptron.best(scores);
        perceptron.update(feats, n, gold, guess);
        history.push(guess);
        total++;
        if (guess === gold) right++;
      }
    }
    options.onEpoch?.(epoch, right / total);
  }
  perceptron.average();
  return perceptron;
}

/** Folds of the training data whose first-pass tags come from a first pass trained on the other folds. */
const FIRST_PASS_FOLDS = 2;

/**
 * Trains the tagger (greedy left-to-right, predicted history) and returns it averaged. The second
 * pass learns from first-pass tags of the training data predicted by jackknifing, so it learns how
 * far to trust them on unseen text.
 */
export function trainTagger(
  sentences: readonly TaggedSentence[],
  labels: readonly string[],
  options: TaggerTrainOptions,
): TaggerModel & { ambiguityText: Map<string, string> } {
  const { ambiguity, unambiguous, ambiguityText } = buildLexicons(sentences);
  const prepared = sentences.map((s) => ({ c: wordCodes(s.words), amb: ambiguityCodes(s.words, ambiguity) }));
  const quiet = { ...options, onEpoch: undefined };
  const rightTags: number[][] = new Array<number[]>(sentences.length);
  for (let f = 0; f < FIRST_PASS_FOLDS; f++) {
    const rest = sentences.map((_, i) => i).filter((i) => i % FIRST_PASS_FOLDS !== f);
    const foldLexicons = buildLexicons(rest.map((i) => sentences[i]!));
    const foldPrepared = sentences.map((s, i) => ({ c: prepared[i]!.c, amb: ambiguityCodes(s.words, foldLexicons.ambiguity) }));
    const fold = trainPass(
      rest.map((i) => sentences[i]!),
      rest.map((i) => foldPrepared[i]!),
      labels.length,
      { ...quiet, seed: options.seed + 1 + f },
    );
    sentences.forEach((s, i) => {
      if (i % FIRST_PASS_FOLDS === f) rightTags[i] = firstPass(fold, foldLexicons.unambiguous, s.words, foldPrepared[i]!.c, foldPrepared[i]!.amb);
    });
  }
  const perceptron = trainPass(sentences, prepared, labels.length, quiet);
  const second = trainPass(sentences, prepared, labels.length, options, rightTags);
  return { perceptron, second, secondPassMargin: options.secondPassMargin, labels, ambiguity, unambiguous, ambiguityText };
}
