import { itemAt } from './checked.js';
import { Perceptron } from './perceptron.js';
import { codesOf, extract, FeatureWindow, MAX_FEATURES, type Codes, type ParserInput } from './parser-features.js';
import { LEFT, legal, NULL_LABEL, SHIFT, State } from './parser-state.js';

export { codesOf, extract, FeatureWindow, MAX_FEATURES, UNKNOWN_TAG, type Codes, type ParserInput } from './parser-features.js';
export { LEFT, legal, NONE, NULL_LABEL, SHIFT, State } from './parser-state.js';

/**
 * Arc-hybrid transition parser (Kuhlmann et al. 2011) with an averaged perceptron, trained with
 * the dynamic oracle of Goldberg & Nivre (2013) and Zhang & Nivre (2011) style rich features.
 * This file decodes; training is parser-training.ts of @loom/nlp-training, which the runtime never loads.
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
  private readonly window = new FeatureWindow();

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
      const count = extract(state, codes, this.window, this.feats[item]!);
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
  const window = new FeatureWindow();
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(3);
  const labelScores = new Float32Array(model.labels.length);
  while (!state.terminal()) {
    const count = extract(state, codes, window, feats);
    model.perceptron.score(feats, count, scores);
    let action = -1;
    for (let candidate = 0; candidate < 3; candidate++) if (legal(state, candidate) && (action < 0 || scores[candidate]! > scores[action]!)) action = candidate;
    state.apply(action, action === SHIFT ? NULL_LABEL : bestLabel(model, action, feats, count, labelScores));
  }
  return treeOf(state);
}
