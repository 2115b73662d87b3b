import { feature, random, shuffle } from './hashing.js';
import { hashString } from './hashing.js';
import { START, wordCodes, type WordCodes } from './features.js';
import { Perceptron } from './perceptron.js';

/** A trained part-of-speech tagger: joint UPOS+XPOS labels, an ambiguity-class lexicon and frequent unambiguous words. */
export interface TaggerModel {
  readonly perceptron: Perceptron;
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
  readonly seed: number;
  readonly bits: number;
  /** Called after each epoch (for progress logs). */
  readonly onEpoch?: (epoch: number, trainAccuracy: number) => void;
}

const MAX_FEATURES = 40;

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
  return n;
}

const NO_TAG = -1;

/** Tags one sentence; returns joint label indices. */
export function tagWords(model: TaggerModel, words: readonly string[]): number[] {
  const c = wordCodes(words);
  const amb = ambiguityCodes(words, model.ambiguity);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(model.labels.length);
  const out: number[] = [];
  for (let i = 0; i < words.length; i++) {
    const known = model.unambiguous.get(words[i]!);
    if (known !== undefined) {
      out.push(known);
      continue;
    }
    const n = extract(c, amb, i, out[i - 1] ?? NO_TAG, out[i - 2] ?? NO_TAG, feats);
    model.perceptron.score(feats, n, scores);
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
    if (total < 2) continue;
    const kept = [...labels]
      .filter(([, n]) => n / total >= 0.05)
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
    if (total >= 20 && bestCount / total >= 0.995) unambiguous.set(form, best);
  }
  return { ambiguity, unambiguous, ambiguityText };
}

/** Trains a tagger (greedy left-to-right, predicted history) and returns it averaged. */
export function trainTagger(
  sentences: readonly TaggedSentence[],
  labels: readonly string[],
  options: TaggerTrainOptions,
): TaggerModel & { ambiguityText: Map<string, string> } {
  const { ambiguity, unambiguous, ambiguityText } = buildLexicons(sentences);
  const perceptron = new Perceptron(labels.length, options.bits);
  const model = { perceptron, labels, ambiguity, unambiguous };
  const next = random(options.seed);
  const order = [...sentences];
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(labels.length);
  const prepared = new Map<TaggedSentence, { c: WordCodes; amb: Int32Array }>();
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    shuffle(order, next);
    let right = 0;
    let total = 0;
    for (const s of order) {
      let p = prepared.get(s);
      if (!p) prepared.set(s, (p = { c: wordCodes(s.words), amb: ambiguityCodes(s.words, ambiguity) }));
      const history: number[] = [];
      for (let i = 0; i < s.words.length; i++) {
        const gold = s.labels[i]!;
        const n = extract(p.c, p.amb, i, history[i - 1] ?? NO_TAG, history[i - 2] ?? NO_TAG, feats);
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
  return { ...model, ambiguityText };
}
