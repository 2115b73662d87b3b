import { feature, hashString, random, shuffle } from './hashing.js';
import { Perceptron } from './perceptron.js';

/**
 * Arc-hybrid transition parser (Kuhlmann et al. 2011) with an averaged perceptron, trained with
 * the dynamic oracle of Goldberg & Nivre (2013) and Zhang & Nivre (2011) style rich features.
 * Actions: 0 SHIFT, 1 LEFT-ARC (s0 ← b0), 2 RIGHT-ARC (s1 → s0); the relation of an arc is chosen
 * by a labeler per direction over the same features (a third of the scoring work of one joint
 * classifier over 1 + 2L actions). The root (0) sits at the bottom of the stack and takes exactly
 * one dependent.
 */
export interface ParserModel {
  /** Scores SHIFT, LEFT-ARC and RIGHT-ARC. */
  readonly perceptron: Perceptron;
  /** Scores the relation of a left arc, and of a right arc. */
  readonly leftLabeler: Perceptron;
  readonly rightLabeler: Perceptron;
  /** Dependency relations with subtypes, e.g. `nsubj`, `obl:tmod`. */
  readonly labels: readonly string[];
}

/** A sentence to parse: word forms and tag codes (any integer coding of the predicted tags). */
export interface ParserInput {
  readonly words: readonly string[];
  readonly tags: readonly number[];
}

/** A training sentence: input plus gold heads (0 = root) and label indices, 1-based positions at index i-1. */
export interface ParserExample extends ParserInput {
  readonly heads: readonly number[];
  readonly labels: readonly number[];
}

export interface ParserTrainOptions {
  readonly epochs: number;
  readonly seed: number;
  readonly bits: number;
  /** Hash-table bits of each labeler (they score every relation per feature, so they need more room than the three actions). */
  readonly labelBits: number;
  /** Probability of following the model's own (possibly wrong) action after the first epoch. */
  readonly explore: number;
  readonly onEpoch?: (epoch: number, model: ParserModel) => void;
}

const MAX_FEATURES = 96;
const NONE = -1;
const NULL_WORD = hashString('<NULL>');
const ROOT_WORD = hashString('<ROOT>');
const NULL_TAG = -2;
const ROOT_TAG = -3;
const NULL_LABEL = -1;
const SHIFT = 0;
const LEFT = 1;

/** Parser state over a sentence of n words (1..n) with the root 0. */
class State {
  readonly n: number;
  readonly stack: Int32Array;
  sp = 0;
  b = 1;
  readonly heads: Int32Array;
  readonly labels: Int32Array;
  readonly lc1: Int32Array;
  readonly lc2: Int32Array;
  readonly rc1: Int32Array;
  readonly rc2: Int32Array;
  readonly nLeft: Int32Array;
  readonly nRight: Int32Array;
  readonly leftSetLo: Int32Array;
  readonly leftSetHi: Int32Array;
  readonly rightSetLo: Int32Array;
  readonly rightSetHi: Int32Array;

  constructor(n: number) {
    this.n = n;
    this.stack = new Int32Array(n + 1);
    this.stack[0] = 0;
    this.sp = 1;
    const filled = (): Int32Array => new Int32Array(n + 1).fill(NONE);
    this.heads = filled();
    this.labels = filled();
    this.lc1 = filled();
    this.lc2 = filled();
    this.rc1 = filled();
    this.rc2 = filled();
    this.nLeft = new Int32Array(n + 1);
    this.nRight = new Int32Array(n + 1);
    this.leftSetLo = new Int32Array(n + 1);
    this.leftSetHi = new Int32Array(n + 1);
    this.rightSetLo = new Int32Array(n + 1);
    this.rightSetHi = new Int32Array(n + 1);
  }

  s(i: number): number {
    return this.sp - 1 - i >= 0 ? this.stack[this.sp - 1 - i]! : NONE;
  }

  bi(i: number): number {
    return this.b + i <= this.n ? this.b + i : NONE;
  }

  terminal(): boolean {
    return this.b > this.n && this.sp === 1;
  }

  attach(head: number, child: number, label: number): void {
    this.heads[child] = head;
    this.labels[child] = label;
    const bit = label & 31;
    if (child < head) {
      this.nLeft[head]!++;
      if (label < 32) this.leftSetLo[head]! |= 1 << bit;
      else this.leftSetHi[head]! |= 1 << bit;
      if (this.lc1[head] === NONE || child < this.lc1[head]!) {
        this.lc2[head] = this.lc1[head]!;
        this.lc1[head] = child;
      } else if (this.lc2[head] === NONE || child < this.lc2[head]!) this.lc2[head] = child;
    } else {
      this.nRight[head]!++;
      if (label < 32) this.rightSetLo[head]! |= 1 << bit;
      else this.rightSetHi[head]! |= 1 << bit;
      if (this.rc1[head] === NONE || child > this.rc1[head]!) {
        this.rc2[head] = this.rc1[head]!;
        this.rc1[head] = child;
      } else if (this.rc2[head] === NONE || child > this.rc2[head]!) this.rc2[head] = child;
    }
  }

  apply(action: number, label: number): void {
    if (action === SHIFT) {
      this.stack[this.sp++] = this.b++;
    } else if (action === LEFT) {
      const s0 = this.stack[--this.sp]!;
      this.attach(this.b, s0, label);
    } else {
      const s0 = this.stack[--this.sp]!;
      this.attach(this.stack[this.sp - 1]!, s0, label);
    }
  }

  canShift(): boolean {
    return this.b <= this.n;
  }

  canLeft(): boolean {
    return this.sp > 1 && this.b <= this.n;
  }

  canRight(): boolean {
    // The root takes its one dependent only once the buffer is empty.
    return this.sp > 2 || (this.sp === 2 && this.b > this.n);
  }
}

/** Integer codes of the words and tags of one sentence, position 0 being the root. */
interface Codes {
  readonly word: Int32Array;
  readonly tag: Int32Array;
}

function codesOf(input: ParserInput): Codes {
  const n = input.words.length;
  const word = new Int32Array(n + 1);
  const tag = new Int32Array(n + 1);
  word[0] = ROOT_WORD;
  tag[0] = ROOT_TAG;
  for (let i = 0; i < n; i++) {
    word[i + 1] = hashString(input.words[i]!.toLowerCase());
    tag[i + 1] = input.tags[i]!;
  }
  return { word, tag };
}

function wordOf(c: Codes, i: number): number {
  return i === NONE ? NULL_WORD : c.word[i]!;
}

function tagOf(c: Codes, i: number): number {
  return i === NONE ? NULL_TAG : c.tag[i]!;
}

function labelOf(st: State, i: number): number {
  return i === NONE ? NULL_LABEL : st.labels[i]!;
}

function at(a: Int32Array, i: number): number {
  return i === NONE ? NONE : a[i]!;
}

function extract(st: State, c: Codes, out: Int32Array): number {
  const s0 = st.s(0);
  const s1 = st.s(1);
  const s2 = st.s(2);
  const b0 = st.bi(0);
  const b1 = st.bi(1);
  const b2 = st.bi(2);
  const s0L = at(st.lc1, s0);
  const s0L2 = at(st.lc2, s0);
  const s0R = at(st.rc1, s0);
  const s0R2 = at(st.rc2, s0);
  const b0L = at(st.lc1, b0);
  const b0L2 = at(st.lc2, b0);
  const s1L = at(st.lc1, s1);
  const s1R = at(st.rc1, s1);
  const s0w = wordOf(c, s0);
  const s0t = tagOf(c, s0);
  const s1w = wordOf(c, s1);
  const s1t = tagOf(c, s1);
  const b0w = wordOf(c, b0);
  const b0t = tagOf(c, b0);
  const b1w = wordOf(c, b1);
  const b1t = tagOf(c, b1);
  const b2t = tagOf(c, b2);
  const d = s0 === NONE || b0 === NONE || s0 === 0 ? 0 : Math.min(b0 - s0, 7);
  const s1s0d = s1 === NONE || s0 === NONE || s1 === 0 ? 0 : Math.min(s0 - s1, 7);
  const s0vl = s0 === NONE ? 0 : st.nLeft[s0]!;
  const s0vr = s0 === NONE ? 0 : st.nRight[s0]!;
  const b0vl = b0 === NONE ? 0 : st.nLeft[b0]!;
  let n = 0;
  // single positions
  out[n++] = feature(1, s0w, s0t);
  out[n++] = feature(2, s0w);
  out[n++] = feature(3, s0t);
  out[n++] = feature(4, b0w, b0t);
  out[n++] = feature(5, b0w);
  out[n++] = feature(6, b0t);
  out[n++] = feature(7, b1w, b1t);
  out[n++] = feature(8, b1w);
  out[n++] = feature(9, b1t);
  out[n++] = feature(10, wordOf(c, b2), b2t);
  out[n++] = feature(11, b2t);
  out[n++] = feature(12, s1w, s1t);
  out[n++] = feature(13, s1w);
  out[n++] = feature(14, s1t);
  out[n++] = feature(15, wordOf(c, s2), tagOf(c, s2));
  // pairs
  out[n++] = feature(20, s0w, s0t, b0w, b0t);
  out[n++] = feature(21, s0w, s0t, b0w);
  out[n++] = feature(22, s0w, b0w, b0t);
  out[n++] = feature(23, s0w, s0t, b0t);
  out[n++] = feature(24, s0t, b0w, b0t);
  out[n++] = feature(25, s0w, b0w);
  out[n++] = feature(26, s0t, b0t);
  out[n++] = feature(27, b0t, b1t);
  out[n++] = feature(28, s1w, s1t, s0w, s0t);
  out[n++] = feature(29, s1t, s0t);
  out[n++] = feature(30, s1w, s0w);
  out[n++] = feature(31, s1t, s0w);
  out[n++] = feature(32, s1w, s0t);
  out[n++] = feature(33, b0w, b1w);
  // triples of tags
  out[n++] = feature(40, b0t, b1t, b2t);
  out[n++] = feature(41, s0t, b0t, b1t);
  out[n++] = feature(42, s1t, s0t, b0t);
  out[n++] = feature(43, s0t, tagOf(c, s0L), b0t);
  out[n++] = feature(44, s0t, tagOf(c, s0R), b0t);
  out[n++] = feature(45, s0t, b0t, tagOf(c, b0L));
  out[n++] = feature(46, s1t, s0t, tagOf(c, s0L));
  out[n++] = feature(47, s1t, s0t, tagOf(c, s0R));
  out[n++] = feature(48, s1t, tagOf(c, s1R), s0t);
  out[n++] = feature(49, tagOf(c, s2), s1t, s0t);
  out[n++] = feature(50, s0w, b0t, b1t);
  out[n++] = feature(51, s0t, b0w, b1t);
  out[n++] = feature(52, s1t, s1L === NONE ? NULL_TAG : tagOf(c, s1L), s0t);
  // distance
  out[n++] = feature(60, s0w, d);
  out[n++] = feature(61, s0t, d);
  out[n++] = feature(62, b0w, d);
  out[n++] = feature(63, b0t, d);
  out[n++] = feature(64, s0w, b0w, d);
  out[n++] = feature(65, s0t, b0t, d);
  out[n++] = feature(66, s1t, s0t, s1s0d);
  out[n++] = feature(67, s1w, s0w, s1s0d);
  // valency
  out[n++] = feature(70, s0w, s0vr);
  out[n++] = feature(71, s0t, s0vr);
  out[n++] = feature(72, s0w, s0vl);
  out[n++] = feature(73, s0t, s0vl);
  out[n++] = feature(74, b0w, b0vl);
  out[n++] = feature(75, b0t, b0vl);
  // children
  out[n++] = feature(80, wordOf(c, s0L));
  out[n++] = feature(81, tagOf(c, s0L));
  out[n++] = feature(82, labelOf(st, s0L));
  out[n++] = feature(83, wordOf(c, s0R));
  out[n++] = feature(84, tagOf(c, s0R));
  out[n++] = feature(85, labelOf(st, s0R));
  out[n++] = feature(86, wordOf(c, b0L));
  out[n++] = feature(87, tagOf(c, b0L));
  out[n++] = feature(88, labelOf(st, b0L));
  out[n++] = feature(89, labelOf(st, s1R), s1t);
  // third order
  out[n++] = feature(90, wordOf(c, s0L2));
  out[n++] = feature(91, tagOf(c, s0L2));
  out[n++] = feature(92, labelOf(st, s0L2));
  out[n++] = feature(93, wordOf(c, s0R2));
  out[n++] = feature(94, tagOf(c, s0R2));
  out[n++] = feature(95, labelOf(st, s0R2));
  out[n++] = feature(96, wordOf(c, b0L2));
  out[n++] = feature(97, tagOf(c, b0L2));
  out[n++] = feature(98, labelOf(st, b0L2));
  out[n++] = feature(99, s0t, tagOf(c, s0L), tagOf(c, s0L2));
  out[n++] = feature(100, s0t, tagOf(c, s0R), tagOf(c, s0R2));
  out[n++] = feature(101, b0t, tagOf(c, b0L), tagOf(c, b0L2));
  // label sets
  out[n++] = feature(110, s0w, at(st.rightSetLo, s0), at(st.rightSetHi, s0));
  out[n++] = feature(111, s0t, at(st.rightSetLo, s0), at(st.rightSetHi, s0));
  out[n++] = feature(112, s0w, at(st.leftSetLo, s0), at(st.leftSetHi, s0));
  out[n++] = feature(113, s0t, at(st.leftSetLo, s0), at(st.leftSetHi, s0));
  out[n++] = feature(114, b0w, at(st.leftSetLo, b0), at(st.leftSetHi, b0));
  out[n++] = feature(115, b0t, at(st.leftSetLo, b0), at(st.leftSetHi, b0));
  // whether the buffer is exhausted and the root is next to s0 (the single-root constraint)
  out[n++] = feature(120, s0t, b0 === NONE ? 1 : 0, s1 === 0 ? 1 : 0);
  return n;
}

function legal(st: State, action: number): boolean {
  if (action === SHIFT) return st.canShift();
  if (action === LEFT) return st.canLeft();
  return st.canRight();
}

/** Unlabelled costs [shift, left, right] of the dynamic oracle for arc-hybrid (Goldberg & Nivre 2013). */
function costs(st: State, gold: Int32Array, out: Int32Array): void {
  const n = st.n;
  const s0 = st.s(0);
  const s1 = st.s(1);
  const b0 = st.b;
  // shift
  if (b0 <= n) {
    let c = 0;
    for (let k = 0; k < st.sp; k++) {
      const item = st.stack[k]!;
      if (gold[item] === b0) c++;
      if (item !== s0 && gold[b0] === item) c++;
    }
    out[0] = c;
  }
  if (s0 !== NONE && s0 !== 0) {
    let deps = 0;
    for (let k = b0; k <= n; k++) if (gold[k] === s0) deps++;
    const h = gold[s0]!;
    const headInBuffer = h >= b0 && h <= n;
    // left: s0's head becomes b0
    out[1] = deps + (h !== b0 && (headInBuffer || h === s1) ? 1 : 0);
    // right: s0's head becomes s1
    out[2] = deps + (headInBuffer ? 1 : 0);
  }
}

/** Parses one sentence; returns heads (0 = root) and label indices for words 1..n at positions 0..n-1. */
export function parse(model: ParserModel, input: ParserInput): { heads: number[]; labels: number[] } {
  const n = input.words.length;
  const st = new State(n);
  const c = codesOf(input);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(3);
  const labelScores = new Float32Array(model.labels.length);
  while (!st.terminal()) {
    const count = extract(st, c, feats);
    model.perceptron.score(feats, count, scores);
    let action = -1;
    for (let a = 0; a < 3; a++) if (legal(st, a) && (action < 0 || scores[a]! > scores[action]!)) action = a;
    let label = NULL_LABEL;
    if (action !== SHIFT) {
      (action === LEFT ? model.leftLabeler : model.rightLabeler).score(feats, count, labelScores);
      label = Perceptron.best(labelScores);
    }
    st.apply(action, label);
  }
  const heads: number[] = [];
  const labels: number[] = [];
  for (let i = 1; i <= n; i++) {
    heads.push(st.heads[i]!);
    labels.push(st.labels[i]!);
  }
  return { heads, labels };
}

/** Trains the parser with the dynamic oracle and exploration; returns the averaged model. */
export function trainParser(examples: readonly ParserExample[], labels: readonly string[], options: ParserTrainOptions): ParserModel {
  const nLabels = labels.length;
  const perceptron = new Perceptron(3, options.bits);
  const leftLabeler = new Perceptron(nLabels, options.labelBits);
  const rightLabeler = new Perceptron(nLabels, options.labelBits);
  const model = { perceptron, leftLabeler, rightLabeler, labels };
  const next = random(options.seed);
  const order = [...examples];
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(3);
  const labelScores = new Float32Array(nLabels);
  const cost = new Int32Array(3);
  const codes = new Map<ParserExample, Codes>();
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    shuffle(order, next);
    for (const ex of order) {
      let c = codes.get(ex);
      if (!c) codes.set(ex, (c = codesOf(ex)));
      const n = ex.words.length;
      const gold = new Int32Array(n + 1);
      const goldLabel = new Int32Array(n + 1);
      gold[0] = NONE;
      for (let i = 1; i <= n; i++) {
        gold[i] = ex.heads[i - 1]!;
        goldLabel[i] = ex.labels[i - 1]!;
      }
      const st = new State(n);
      while (!st.terminal()) {
        const count = extract(st, c, feats);
        perceptron.score(feats, count, scores);
        cost.fill(1 << 20);
        costs(st, gold, cost);
        let guess = -1;
        let best = -1;
        for (let a = 0; a < 3; a++) {
          if (!legal(st, a)) continue;
          if (guess < 0 || scores[a]! > scores[guess]!) guess = a;
          if (best < 0 || cost[a]! < cost[best]! || (cost[a] === cost[best] && scores[a]! > scores[best]!)) best = a;
        }
        perceptron.tick();
        if (cost[guess]! > cost[best]!) perceptron.update(feats, count, best, guess);
        const action = epoch > 1 && next() < options.explore ? guess : best;
        let label = NULL_LABEL;
        if (action !== SHIFT) {
          const s0 = st.s(0);
          const head = action === LEFT ? st.b : st.s(1);
          const labeler = action === LEFT ? leftLabeler : rightLabeler;
          labeler.score(feats, count, labelScores);
          label = Perceptron.best(labelScores);
          if (gold[s0] === head) {
            labeler.tick();
            labeler.update(feats, count, goldLabel[s0]!, label);
            label = goldLabel[s0]!;
          }
        }
        st.apply(action, label);
      }
    }
    options.onEpoch?.(epoch, model);
  }
  perceptron.average();
  leftLabeler.average();
  rightLabeler.average();
  return model;
}
