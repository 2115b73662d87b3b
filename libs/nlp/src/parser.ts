import { feature, hashString } from './hashing.js';
import { Perceptron } from './perceptron.js';

/**
 * Arc-hybrid transition parser (Kuhlmann et al. 2011) with an averaged perceptron, trained with
 * the dynamic oracle of Goldberg & Nivre (2013) and Zhang & Nivre (2011) style rich features.
 * This file decodes; training is parser-training.ts, which the runtime entry never loads.
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
  /** Beam width of decoding; 1 is greedy. */
  readonly beam: number;
}

/** A sentence to parse: word forms and tag codes (any integer coding of the predicted tags). */
export interface ParserInput {
  readonly words: readonly string[];
  readonly tags: readonly number[];
}

export const MAX_FEATURES = 96;
export const NONE = -1;
const NULL_WORD = hashString('<NULL>');
const ROOT_WORD = hashString('<ROOT>');
const NULL_TAG = -2;
const ROOT_TAG = -3;
/**
 * Tag code of a tag the model's tag list does not hold (a tagger label the parser never saw in
 * training): apart from every tag and from the null and root codes, so it shares their weights with none.
 */
export const UNKNOWN_TAG = -4;
/** Distances between two words are features up to this many words; longer ones count as this. */
const MAX_DISTANCE = 7;
/** Labels 0..31 of a word's dependents are bits of one 32-bit set, labels 32..63 of a second. */
const LABEL_SET_BITS = 32;
/** Number of Int32Array views a State keeps in its one buffer. */
const STATE_ARRAYS = 13;
export const NULL_LABEL = -1;
export const SHIFT = 0;
export const LEFT = 1;

/** Parser state over a sentence of n words (1..n) with the root 0. */
export class State {
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

  /** All the arrays above are views of this one buffer, so copying a state is one copy. */
  private readonly buffer: Int32Array;

  constructor(n: number) {
    this.n = n;
    const size = n + 1;
    this.buffer = new Int32Array(STATE_ARRAYS * size);
    const view = (k: number): Int32Array => this.buffer.subarray(k * size, (k + 1) * size);
    this.stack = view(0);
    this.heads = view(1);
    this.labels = view(2);
    this.lc1 = view(3);
    this.lc2 = view(4);
    this.rc1 = view(5);
    this.rc2 = view(6);
    this.nLeft = view(7);
    this.nRight = view(8);
    this.leftSetLo = view(9);
    this.leftSetHi = view(10);
    this.rightSetLo = view(11);
    this.rightSetHi = view(12);
    // heads, labels and the four nearest-child arrays start as NONE
    this.buffer.fill(NONE, size, 7 * size);
    this.stack[0] = 0;
    this.sp = 1;
  }

  /** Becomes a copy of `o` (a state of the same sentence), so beam items reuse their arrays. */
  copyFrom(o: State): void {
    this.sp = o.sp;
    this.b = o.b;
    this.buffer.set(o.buffer);
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
    const bit = label & (LABEL_SET_BITS - 1);
    if (child < head) {
      this.nLeft[head]!++;
      if (label < LABEL_SET_BITS) this.leftSetLo[head]! |= 1 << bit;
      else this.leftSetHi[head]! |= 1 << bit;
      if (this.lc1[head] === NONE || child < this.lc1[head]!) {
        this.lc2[head] = this.lc1[head]!;
        this.lc1[head] = child;
      } else if (this.lc2[head] === NONE || child < this.lc2[head]!) this.lc2[head] = child;
    } else {
      this.nRight[head]!++;
      if (label < LABEL_SET_BITS) this.rightSetLo[head]! |= 1 << bit;
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

  /** The head the arc of transition `action` (LEFT or RIGHT) gives s0: b0 for a left arc, s1 for a right one. */
  arcHead(action: number): number {
    return action === LEFT ? this.b : this.s(1);
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
export interface Codes {
  readonly word: Int32Array;
  readonly tag: Int32Array;
}

export function codesOf(input: ParserInput): Codes {
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

/** Features of the words at the top of the stack and the front of the buffer, alone, in pairs and with their nearest dependents' tags. */
function positionFeatures(st: State, c: Codes, out: Int32Array): number {
  const s0 = st.s(0);
  const s1 = st.s(1);
  const s2 = st.s(2);
  const b0 = st.bi(0);
  const b1 = st.bi(1);
  const b2 = st.bi(2);
  const s0L = at(st.lc1, s0);
  const s0R = at(st.rc1, s0);
  const b0L = at(st.lc1, b0);
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
  return n;
}

/** Distance and valency features, written from `out[n]`; returns the new count. */
function distanceFeatures(st: State, c: Codes, out: Int32Array, n: number): number {
  const s0 = st.s(0);
  const s1 = st.s(1);
  const b0 = st.bi(0);
  const s0w = wordOf(c, s0);
  const s0t = tagOf(c, s0);
  const s1w = wordOf(c, s1);
  const s1t = tagOf(c, s1);
  const b0w = wordOf(c, b0);
  const b0t = tagOf(c, b0);
  const d = s0 === NONE || b0 === NONE || s0 === 0 ? 0 : Math.min(b0 - s0, MAX_DISTANCE);
  const s1s0d = s1 === NONE || s0 === NONE || s1 === 0 ? 0 : Math.min(s0 - s1, MAX_DISTANCE);
  const s0vl = s0 === NONE ? 0 : st.nLeft[s0]!;
  const s0vr = s0 === NONE ? 0 : st.nRight[s0]!;
  const b0vl = b0 === NONE ? 0 : st.nLeft[b0]!;
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
  return n;
}

/** Features of the dependents built so far (words, tags, relations, relation sets), written from `out[n]`; returns the new count. */
function childFeatures(st: State, c: Codes, out: Int32Array, n: number): number {
  const s0 = st.s(0);
  const s1 = st.s(1);
  const b0 = st.bi(0);
  const s0L = at(st.lc1, s0);
  const s0L2 = at(st.lc2, s0);
  const s0R = at(st.rc1, s0);
  const s0R2 = at(st.rc2, s0);
  const b0L = at(st.lc1, b0);
  const b0L2 = at(st.lc2, b0);
  const s1R = at(st.rc1, s1);
  const s0w = wordOf(c, s0);
  const s0t = tagOf(c, s0);
  const s1t = tagOf(c, s1);
  const b0w = wordOf(c, b0);
  const b0t = tagOf(c, b0);
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

/** Writes the features of a state into `out` (at most MAX_FEATURES) and returns their count. */
export function extract(st: State, c: Codes, out: Int32Array): number {
  return childFeatures(st, c, out, distanceFeatures(st, c, out, positionFeatures(st, c, out)));
}

export function legal(st: State, action: number): boolean {
  if (action === SHIFT) return st.canShift();
  if (action === LEFT) return st.canLeft();
  return st.canRight();
}

/** The relation the labeler of the arc's direction scores best over the features of the state before the arc. */
export function bestLabel(model: ParserModel, action: number, feats: Int32Array, count: number, scratch: Float32Array): number {
  (action === LEFT ? model.leftLabeler : model.rightLabeler).score(feats, count, scratch);
  return Perceptron.best(scratch);
}

const MAX_SHARED_STRIDE = 9000;

/**
 * The beam of one sentence: up to `width` states with their summed transition scores, advanced in
 * lock step (every arc-hybrid derivation of n words takes exactly 2n transitions). The beam ranks
 * transitions only; the relation of an arc is then chosen by its labeler for the surviving items
 * alone, so a beam of k costs about k greedy parses rather than k × (1 + 2L) scorings. Items of a
 * beam mostly build the same arcs, so the relation is chosen once per arc and dependent subtree
 * (head, dependent, the dependent's outermost dependents) and reused by every item building it:
 * scoring the relations was most of the beam's time.
 */
export class Beam {
  items: State[];
  private spare: State[];
  scores: Float64Array;
  private spareScores: Float64Array;
  size = 1;
  /** Features of each item's current state (filled by expand). */
  readonly feats: Int32Array[];
  readonly counts: Int32Array;
  /** Candidates of the last expand, best first: the item they extend, the transition, the summed score. */
  readonly candItem: Int32Array;
  readonly candAction: Int32Array;
  readonly candScore: Float64Array;
  candidates = 0;
  /** For each item after advance: the item of the previous step it extends and the transition taken. */
  readonly parent: Int32Array;
  readonly action: Int32Array;
  private readonly transitionScores = new Float32Array(3);
  private readonly labelScores: Float32Array;
  private readonly arcLabels = new Map<number, number>();

  constructor(
    n: number,
    readonly width: number,
    labels: number,
  ) {
    this.items = Array.from({ length: width }, () => new State(n));
    this.spare = Array.from({ length: width }, () => new State(n));
    this.scores = new Float64Array(width);
    this.spareScores = new Float64Array(width);
    this.feats = Array.from({ length: width }, () => new Int32Array(MAX_FEATURES));
    this.counts = new Int32Array(width);
    this.candItem = new Int32Array(3 * width);
    this.candAction = new Int32Array(3 * width);
    this.candScore = new Float64Array(3 * width);
    this.parent = new Int32Array(width);
    this.action = new Int32Array(width);
    this.labelScores = new Float32Array(labels);
  }

  terminal(): boolean {
    return this.items[0]!.terminal();
  }

  /** Extracts each item's features and lists every legal transition, sorted by summed score (ties: earlier item, lower action). */
  expand(model: ParserModel, c: Codes): void {
    let m = 0;
    for (let i = 0; i < this.size; i++) {
      const st = this.items[i]!;
      const count = extract(st, c, this.feats[i]!);
      this.counts[i] = count;
      model.perceptron.score(this.feats[i]!, count, this.transitionScores);
      for (let a = 0; a < 3; a++) {
        if (!legal(st, a)) continue;
        const score = this.scores[i]! + this.transitionScores[a]!;
        // insertion into the sorted list (at most 3 × width entries)
        let j = m++;
        while (j > 0 && this.candScore[j - 1]! < score) {
          this.candItem[j] = this.candItem[j - 1]!;
          this.candAction[j] = this.candAction[j - 1]!;
          this.candScore[j] = this.candScore[j - 1]!;
          j--;
        }
        this.candItem[j] = i;
        this.candAction[j] = a;
        this.candScore[j] = score;
      }
    }
    this.candidates = m;
  }

  /** The relation of the arc that transition `a` makes from item `i`'s state `st` (see the class comment). */
  private label(model: ParserModel, st: State, a: number, i: number): number {
    const stride = st.n + 2;
    // The key below is exact while stride⁴ < 2⁵³; a longer "sentence" is labelled without sharing.
    if (stride > MAX_SHARED_STRIDE) return bestLabel(model, a, this.feats[i]!, this.counts[i]!, this.labelScores);
    const d = st.s(0);
    const h = st.arcHead(a);
    const key = ((h * stride + d) * stride + st.lc1[d]! + 1) * stride + st.rc1[d]! + 1;
    let label = this.arcLabels.get(key);
    if (label === undefined) {
      label = bestLabel(model, a, this.feats[i]!, this.counts[i]!, this.labelScores);
      this.arcLabels.set(key, label);
    }
    return label;
  }

  /** Keeps the best `width` candidates; an arc's relation is the one its labeler scores best. */
  advance(model: ParserModel): void {
    const keep = Math.min(this.width, this.candidates);
    for (let j = 0; j < keep; j++) {
      const i = this.candItem[j]!;
      const a = this.candAction[j]!;
      const st = this.spare[j]!;
      st.copyFrom(this.items[i]!);
      const label = a === SHIFT ? NULL_LABEL : this.label(model, this.items[i]!, a, i);
      st.apply(a, label);
      this.spareScores[j] = this.candScore[j]!;
      this.parent[j] = i;
      this.action[j] = a;
    }
    [this.items, this.spare] = [this.spare, this.items];
    [this.scores, this.spareScores] = [this.spareScores, this.scores];
    this.size = keep;
  }
}

/** Heads and labels of words 1..n at positions 0..n-1. */
function treeOf(st: State): { heads: number[]; labels: number[] } {
  const heads: number[] = [];
  const labels: number[] = [];
  for (let i = 1; i <= st.n; i++) {
    heads.push(st.heads[i]!);
    labels.push(st.labels[i]!);
  }
  return { heads, labels };
}

/** Parses one sentence (greedily, or with the model's beam); returns heads (0 = root) and label indices for words 1..n at positions 0..n-1. */
export function parse(model: ParserModel, input: ParserInput): { heads: number[]; labels: number[] } {
  const c = codesOf(input);
  if (model.beam > 1) {
    const beam = new Beam(input.words.length, model.beam, model.labels.length);
    while (!beam.terminal()) {
      beam.expand(model, c);
      beam.advance(model);
    }
    return treeOf(beam.items[0]!);
  }
  const st = new State(input.words.length);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(3);
  const labelScores = new Float32Array(model.labels.length);
  while (!st.terminal()) {
    const count = extract(st, c, feats);
    model.perceptron.score(feats, count, scores);
    let action = -1;
    for (let a = 0; a < 3; a++) if (legal(st, a) && (action < 0 || scores[a]! > scores[action]!)) action = a;
    st.apply(action, action === SHIFT ? NULL_LABEL : bestLabel(model, action, feats, count, labelScores));
  }
  return treeOf(st);
}
