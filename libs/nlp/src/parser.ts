import { itemAt } from './checked.js';
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
  readonly wordCount: number;
  readonly stack: Int32Array;
  stackSize = 0;
  bufferFront = 1;
  readonly heads: Int32Array;
  readonly labels: Int32Array;
  readonly leftmostChild: Int32Array;
  readonly secondLeftmostChild: Int32Array;
  readonly rightmostChild: Int32Array;
  readonly secondRightmostChild: Int32Array;
  readonly leftValency: Int32Array;
  readonly rightValency: Int32Array;
  readonly leftSetLo: Int32Array;
  readonly leftSetHi: Int32Array;
  readonly rightSetLo: Int32Array;
  readonly rightSetHi: Int32Array;

  /** All the arrays above are views of this one buffer, so copying a state is one copy. */
  private readonly buffer: Int32Array;

  constructor(wordCount: number) {
    this.wordCount = wordCount;
    const size = wordCount + 1;
    this.buffer = new Int32Array(STATE_ARRAYS * size);
    const view = (part: number): Int32Array => this.buffer.subarray(part * size, (part + 1) * size);
    this.stack = view(0);
    this.heads = view(1);
    this.labels = view(2);
    this.leftmostChild = view(3);
    this.secondLeftmostChild = view(4);
    this.rightmostChild = view(5);
    this.secondRightmostChild = view(6);
    this.leftValency = view(7);
    this.rightValency = view(8);
    this.leftSetLo = view(9);
    this.leftSetHi = view(10);
    this.rightSetLo = view(11);
    this.rightSetHi = view(12);
    // heads, labels and the four nearest-child arrays start as NONE
    this.buffer.fill(NONE, size, 7 * size);
    this.stack[0] = 0;
    this.stackSize = 1;
  }

  /** Becomes a copy of `o` (a state of the same sentence), so beam items reuse their arrays. */
  copyFrom(other: State): void {
    this.stackSize = other.stackSize;
    this.bufferFront = other.bufferFront;
    this.buffer.set(other.buffer);
  }

  stackItem(depth: number): number {
    return this.stackSize - 1 - depth >= 0 ? this.stack[this.stackSize - 1 - depth]! : NONE;
  }

  bufferItem(offset: number): number {
    return this.bufferFront + offset <= this.wordCount ? this.bufferFront + offset : NONE;
  }

  terminal(): boolean {
    return this.bufferFront > this.wordCount && this.stackSize === 1;
  }

  attach(head: number, child: number, label: number): void {
    this.heads[child] = head;
    this.labels[child] = label;
    const bit = label & (LABEL_SET_BITS - 1);
    if (child < head) {
      this.leftValency[head]!++;
      if (label < LABEL_SET_BITS) this.leftSetLo[head]! |= 1 << bit;
      else this.leftSetHi[head]! |= 1 << bit;
      if (this.leftmostChild[head] === NONE || child < this.leftmostChild[head]!) {
        this.secondLeftmostChild[head] = this.leftmostChild[head]!;
        this.leftmostChild[head] = child;
      } else if (this.secondLeftmostChild[head] === NONE || child < this.secondLeftmostChild[head]!) this.secondLeftmostChild[head] = child;
    } else {
      this.rightValency[head]!++;
      if (label < LABEL_SET_BITS) this.rightSetLo[head]! |= 1 << bit;
      else this.rightSetHi[head]! |= 1 << bit;
      if (this.rightmostChild[head] === NONE || child > this.rightmostChild[head]!) {
        this.secondRightmostChild[head] = this.rightmostChild[head]!;
        this.rightmostChild[head] = child;
      } else if (this.secondRightmostChild[head] === NONE || child > this.secondRightmostChild[head]!) this.secondRightmostChild[head] = child;
    }
  }

  apply(action: number, label: number): void {
    if (action === SHIFT) {
      this.stack[this.stackSize++] = this.bufferFront++;
    } else if (action === LEFT) {
      const s0 = this.stack[--this.stackSize]!;
      this.attach(this.bufferFront, s0, label);
    } else {
      const s0 = this.stack[--this.stackSize]!;
      this.attach(this.stack[this.stackSize - 1]!, s0, label);
    }
  }

  /** The head the arc of transition `action` (LEFT or RIGHT) gives s0: b0 for a left arc, s1 for a right one. */
  arcHead(action: number): number {
    return action === LEFT ? this.bufferFront : this.stackItem(1);
  }

  canShift(): boolean {
    return this.bufferFront <= this.wordCount;
  }

  canLeft(): boolean {
    return this.stackSize > 1 && this.bufferFront <= this.wordCount;
  }

  canRight(): boolean {
    // The root takes its one dependent only once the buffer is empty.
    return this.stackSize > 2 || (this.stackSize === 2 && this.bufferFront > this.wordCount);
  }
}

/** Integer codes of the words and tags of one sentence, position 0 being the root. */
export interface Codes {
  readonly word: Int32Array;
  readonly tag: Int32Array;
}

export function codesOf(input: ParserInput): Codes {
  const wordCount = input.words.length;
  const word = new Int32Array(wordCount + 1);
  const tag = new Int32Array(wordCount + 1);
  word[0] = ROOT_WORD;
  tag[0] = ROOT_TAG;
  for (let position = 0; position < wordCount; position++) {
    word[position + 1] = hashString(itemAt(input.words, position, 'input.words').toLowerCase());
    tag[position + 1] = itemAt(input.tags, position, 'input.tags');
  }
  return { word, tag };
}

function wordOf(codes: Codes, position: number): number {
  return position === NONE ? NULL_WORD : codes.word[position]!;
}

function tagOf(codes: Codes, position: number): number {
  return position === NONE ? NULL_TAG : codes.tag[position]!;
}

function labelOf(state: State, position: number): number {
  return position === NONE ? NULL_LABEL : state.labels[position]!;
}

function at(array: Int32Array, position: number): number {
  return position === NONE ? NONE : array[position]!;
}

/** Features of the words at the top of the stack and the front of the buffer, alone, in pairs and with their nearest dependents' tags. */
function positionFeatures(state: State, codes: Codes, out: Int32Array): number {
  const s0 = state.stackItem(0);
  const s1 = state.stackItem(1);
  const s2 = state.stackItem(2);
  const b0 = state.bufferItem(0);
  const b1 = state.bufferItem(1);
  const b2 = state.bufferItem(2);
  const s0L = at(state.leftmostChild, s0);
  const s0R = at(state.rightmostChild, s0);
  const b0L = at(state.leftmostChild, b0);
  const s1L = at(state.leftmostChild, s1);
  const s1R = at(state.rightmostChild, s1);
  const s0w = wordOf(codes, s0);
  const s0t = tagOf(codes, s0);
  const s1w = wordOf(codes, s1);
  const s1t = tagOf(codes, s1);
  const b0w = wordOf(codes, b0);
  const b0t = tagOf(codes, b0);
  const b1w = wordOf(codes, b1);
  const b1t = tagOf(codes, b1);
  const b2t = tagOf(codes, b2);
  let wordCount = 0;
  // single positions
  out[wordCount++] = feature(1, s0w, s0t);
  out[wordCount++] = feature(2, s0w);
  out[wordCount++] = feature(3, s0t);
  out[wordCount++] = feature(4, b0w, b0t);
  out[wordCount++] = feature(5, b0w);
  out[wordCount++] = feature(6, b0t);
  out[wordCount++] = feature(7, b1w, b1t);
  out[wordCount++] = feature(8, b1w);
  out[wordCount++] = feature(9, b1t);
  out[wordCount++] = feature(10, wordOf(codes, b2), b2t);
  out[wordCount++] = feature(11, b2t);
  out[wordCount++] = feature(12, s1w, s1t);
  out[wordCount++] = feature(13, s1w);
  out[wordCount++] = feature(14, s1t);
  out[wordCount++] = feature(15, wordOf(codes, s2), tagOf(codes, s2));
  // pairs
  out[wordCount++] = feature(20, s0w, s0t, b0w, b0t);
  out[wordCount++] = feature(21, s0w, s0t, b0w);
  out[wordCount++] = feature(22, s0w, b0w, b0t);
  out[wordCount++] = feature(23, s0w, s0t, b0t);
  out[wordCount++] = feature(24, s0t, b0w, b0t);
  out[wordCount++] = feature(25, s0w, b0w);
  out[wordCount++] = feature(26, s0t, b0t);
  out[wordCount++] = feature(27, b0t, b1t);
  out[wordCount++] = feature(28, s1w, s1t, s0w, s0t);
  out[wordCount++] = feature(29, s1t, s0t);
  out[wordCount++] = feature(30, s1w, s0w);
  out[wordCount++] = feature(31, s1t, s0w);
  out[wordCount++] = feature(32, s1w, s0t);
  out[wordCount++] = feature(33, b0w, b1w);
  // triples of tags
  out[wordCount++] = feature(40, b0t, b1t, b2t);
  out[wordCount++] = feature(41, s0t, b0t, b1t);
  out[wordCount++] = feature(42, s1t, s0t, b0t);
  out[wordCount++] = feature(43, s0t, tagOf(codes, s0L), b0t);
  out[wordCount++] = feature(44, s0t, tagOf(codes, s0R), b0t);
  out[wordCount++] = feature(45, s0t, b0t, tagOf(codes, b0L));
  out[wordCount++] = feature(46, s1t, s0t, tagOf(codes, s0L));
  out[wordCount++] = feature(47, s1t, s0t, tagOf(codes, s0R));
  out[wordCount++] = feature(48, s1t, tagOf(codes, s1R), s0t);
  out[wordCount++] = feature(49, tagOf(codes, s2), s1t, s0t);
  out[wordCount++] = feature(50, s0w, b0t, b1t);
  out[wordCount++] = feature(51, s0t, b0w, b1t);
  out[wordCount++] = feature(52, s1t, s1L === NONE ? NULL_TAG : tagOf(codes, s1L), s0t);
  return wordCount;
}

/** Distance and valency features, written from `out[n]`; returns the new count. */
function distanceFeatures(state: State, codes: Codes, out: Int32Array, wordCount: number): number {
  const s0 = state.stackItem(0);
  const s1 = state.stackItem(1);
  const b0 = state.bufferItem(0);
  const s0w = wordOf(codes, s0);
  const s0t = tagOf(codes, s0);
  const s1w = wordOf(codes, s1);
  const s1t = tagOf(codes, s1);
  const b0w = wordOf(codes, b0);
  const b0t = tagOf(codes, b0);
  const distance = s0 === NONE || b0 === NONE || s0 === 0 ? 0 : Math.min(b0 - s0, MAX_DISTANCE);
  const s1s0d = s1 === NONE || s0 === NONE || s1 === 0 ? 0 : Math.min(s0 - s1, MAX_DISTANCE);
  const s0vl = s0 === NONE ? 0 : state.leftValency[s0]!;
  const s0vr = s0 === NONE ? 0 : state.rightValency[s0]!;
  const b0vl = b0 === NONE ? 0 : state.leftValency[b0]!;
  // distance
  out[wordCount++] = feature(60, s0w, distance);
  out[wordCount++] = feature(61, s0t, distance);
  out[wordCount++] = feature(62, b0w, distance);
  out[wordCount++] = feature(63, b0t, distance);
  out[wordCount++] = feature(64, s0w, b0w, distance);
  out[wordCount++] = feature(65, s0t, b0t, distance);
  out[wordCount++] = feature(66, s1t, s0t, s1s0d);
  out[wordCount++] = feature(67, s1w, s0w, s1s0d);
  // valency
  out[wordCount++] = feature(70, s0w, s0vr);
  out[wordCount++] = feature(71, s0t, s0vr);
  out[wordCount++] = feature(72, s0w, s0vl);
  out[wordCount++] = feature(73, s0t, s0vl);
  out[wordCount++] = feature(74, b0w, b0vl);
  out[wordCount++] = feature(75, b0t, b0vl);
  return wordCount;
}

/** Features of the dependents built so far (words, tags, relations, relation sets), written from `out[n]`; returns the new count. */
function childFeatures(state: State, codes: Codes, out: Int32Array, wordCount: number): number {
  const s0 = state.stackItem(0);
  const s1 = state.stackItem(1);
  const b0 = state.bufferItem(0);
  const s0L = at(state.leftmostChild, s0);
  const s0L2 = at(state.secondLeftmostChild, s0);
  const s0R = at(state.rightmostChild, s0);
  const s0R2 = at(state.secondRightmostChild, s0);
  const b0L = at(state.leftmostChild, b0);
  const b0L2 = at(state.secondLeftmostChild, b0);
  const s1R = at(state.rightmostChild, s1);
  const s0w = wordOf(codes, s0);
  const s0t = tagOf(codes, s0);
  const s1t = tagOf(codes, s1);
  const b0w = wordOf(codes, b0);
  const b0t = tagOf(codes, b0);
  // children
  out[wordCount++] = feature(80, wordOf(codes, s0L));
  out[wordCount++] = feature(81, tagOf(codes, s0L));
  out[wordCount++] = feature(82, labelOf(state, s0L));
  out[wordCount++] = feature(83, wordOf(codes, s0R));
  out[wordCount++] = feature(84, tagOf(codes, s0R));
  out[wordCount++] = feature(85, labelOf(state, s0R));
  out[wordCount++] = feature(86, wordOf(codes, b0L));
  out[wordCount++] = feature(87, tagOf(codes, b0L));
  out[wordCount++] = feature(88, labelOf(state, b0L));
  out[wordCount++] = feature(89, labelOf(state, s1R), s1t);
  // third order
  out[wordCount++] = feature(90, wordOf(codes, s0L2));
  out[wordCount++] = feature(91, tagOf(codes, s0L2));
  out[wordCount++] = feature(92, labelOf(state, s0L2));
  out[wordCount++] = feature(93, wordOf(codes, s0R2));
  out[wordCount++] = feature(94, tagOf(codes, s0R2));
  out[wordCount++] = feature(95, labelOf(state, s0R2));
  out[wordCount++] = feature(96, wordOf(codes, b0L2));
  out[wordCount++] = feature(97, tagOf(codes, b0L2));
  out[wordCount++] = feature(98, labelOf(state, b0L2));
  out[wordCount++] = feature(99, s0t, tagOf(codes, s0L), tagOf(codes, s0L2));
  out[wordCount++] = feature(100, s0t, tagOf(codes, s0R), tagOf(codes, s0R2));
  out[wordCount++] = feature(101, b0t, tagOf(codes, b0L), tagOf(codes, b0L2));
  // label sets
  out[wordCount++] = feature(110, s0w, at(state.rightSetLo, s0), at(state.rightSetHi, s0));
  out[wordCount++] = feature(111, s0t, at(state.rightSetLo, s0), at(state.rightSetHi, s0));
  out[wordCount++] = feature(112, s0w, at(state.leftSetLo, s0), at(state.leftSetHi, s0));
  out[wordCount++] = feature(113, s0t, at(state.leftSetLo, s0), at(state.leftSetHi, s0));
  out[wordCount++] = feature(114, b0w, at(state.leftSetLo, b0), at(state.leftSetHi, b0));
  out[wordCount++] = feature(115, b0t, at(state.leftSetLo, b0), at(state.leftSetHi, b0));
  // whether the buffer is exhausted and the root is next to s0 (the single-root constraint)
  out[wordCount++] = feature(120, s0t, b0 === NONE ? 1 : 0, s1 === 0 ? 1 : 0);
  return wordCount;
}

/** Writes the features of a state into `out` (at most MAX_FEATURES) and returns their count. */
export function extract(state: State, codes: Codes, out: Int32Array): number {
  return childFeatures(state, codes, out, distanceFeatures(state, codes, out, positionFeatures(state, codes, out)));
}

export function legal(state: State, action: number): boolean {
  if (action === SHIFT) return state.canShift();
  if (action === LEFT) return state.canLeft();
  return state.canRight();
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
    wordCount: number,
    readonly width: number,
    labels: number,
  ) {
    this.items = Array.from({ length: width }, () => new State(wordCount));
    this.spare = Array.from({ length: width }, () => new State(wordCount));
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
    return itemAt(this.items, 0, 'this.items').terminal();
  }

  /** Extracts each item's features and lists every legal transition, sorted by summed score (ties: earlier item, lower action). */
  expand(model: ParserModel, codes: Codes): void {
    let listed = 0;
    for (let item = 0; item < this.size; item++) {
      const state = itemAt(this.items, item, 'this.items');
      const count = extract(state, codes, this.feats[item]!);
      this.counts[item] = count;
      model.perceptron.score(this.feats[item]!, count, this.transitionScores);
      for (let action = 0; action < 3; action++) {
        if (!legal(state, action)) continue;
        const score = this.scores[item]! + this.transitionScores[action]!;
        // insertion into the sorted list (at most 3 × width entries)
        let slot = listed++;
        while (slot > 0 && this.candScore[slot - 1]! < score) {
          this.candItem[slot] = this.candItem[slot - 1]!;
          this.candAction[slot] = this.candAction[slot - 1]!;
          this.candScore[slot] = this.candScore[slot - 1]!;
          slot--;
        }
        this.candItem[slot] = item;
        this.candAction[slot] = action;
        this.candScore[slot] = score;
      }
    }
    this.candidates = listed;
  }

  /** The relation of the arc that transition `a` makes from item `i`'s state `st` (see the class comment). */
  private label(model: ParserModel, state: State, action: number, item: number): number {
    const stride = state.wordCount + 2;
    // The key below is exact while stride⁴ < 2⁵³; a longer "sentence" is labelled without sharing.
    if (stride > MAX_SHARED_STRIDE) return bestLabel(model, action, this.feats[item]!, this.counts[item]!, this.labelScores);
    const distance = state.stackItem(0);
    const head = state.arcHead(action);
    const key = ((head * stride + distance) * stride + state.leftmostChild[distance]! + 1) * stride + state.rightmostChild[distance]! + 1;
    let label = this.arcLabels.get(key);
    if (label === undefined) {
      label = bestLabel(model, action, this.feats[item]!, this.counts[item]!, this.labelScores);
      this.arcLabels.set(key, label);
    }
    return label;
  }

  /** Keeps the best `width` candidates; an arc's relation is the one its labeler scores best. */
  advance(model: ParserModel): void {
    const keep = Math.min(this.width, this.candidates);
    for (let slot = 0; slot < keep; slot++) {
      const item = this.candItem[slot]!;
      const action = this.candAction[slot]!;
      const state = itemAt(this.spare, slot, 'this.spare');
      state.copyFrom(itemAt(this.items, item, 'this.items'));
      const label = action === SHIFT ? NULL_LABEL : this.label(model, itemAt(this.items, item, 'this.items'), action, item);
      state.apply(action, label);
      this.spareScores[slot] = this.candScore[slot]!;
      this.parent[slot] = item;
      this.action[slot] = action;
    }
    [this.items, this.spare] = [this.spare, this.items];
    [this.scores, this.spareScores] = [this.spareScores, this.scores];
    this.size = keep;
  }
}

/** Heads and labels of words 1..n at positions 0..n-1. */
function treeOf(state: State): { heads: number[]; labels: number[] } {
  const heads: number[] = [];
  const labels: number[] = [];
  for (let word = 1; word <= state.wordCount; word++) {
    heads.push(state.heads[word]!);
    labels.push(state.labels[word]!);
  }
  return { heads, labels };
}

/** Parses one sentence (greedily, or with the model's beam); returns heads (0 = root) and label indices for words 1..n at positions 0..n-1. */
export function parse(model: ParserModel, input: ParserInput): { heads: number[]; labels: number[] } {
  const codes = codesOf(input);
  if (model.beam > 1) {
    const beam = new Beam(input.words.length, model.beam, model.labels.length);
    while (!beam.terminal()) {
      beam.expand(model, codes);
      beam.advance(model);
    }
    return treeOf(itemAt(beam.items, 0, 'beam.items'));
  }
  const state = new State(input.words.length);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(3);
  const labelScores = new Float32Array(model.labels.length);
  while (!state.terminal()) {
    const count = extract(state, codes, feats);
    model.perceptron.score(feats, count, scores);
    let action = -1;
    for (let candidate = 0; candidate < 3; candidate++) if (legal(state, candidate) && (action < 0 || scores[candidate]! > scores[action]!)) action = candidate;
    state.apply(action, action === SHIFT ? NULL_LABEL : bestLabel(model, action, feats, count, labelScores));
  }
  return treeOf(state);
}
