import { itemAt } from './checked.js';
import { feature, hashString } from './hashing.js';
import { NONE, NULL_LABEL, type State } from './parser-state.js';

// The features the arc-hybrid parser (parser.ts) scores a state by.

/** A sentence to parse: word forms and tag codes (any integer coding of the predicted tags). */
export interface ParserInput {
  readonly words: readonly string[];
  readonly tags: readonly number[];
}

export const MAX_FEATURES = 96;
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
  let count = 0;
  // single positions
  out[count++] = feature(1, s0w, s0t);
  out[count++] = feature(2, s0w);
  out[count++] = feature(3, s0t);
  out[count++] = feature(4, b0w, b0t);
  out[count++] = feature(5, b0w);
  out[count++] = feature(6, b0t);
  out[count++] = feature(7, b1w, b1t);
  out[count++] = feature(8, b1w);
  out[count++] = feature(9, b1t);
  out[count++] = feature(10, wordOf(codes, b2), b2t);
  out[count++] = feature(11, b2t);
  out[count++] = feature(12, s1w, s1t);
  out[count++] = feature(13, s1w);
  out[count++] = feature(14, s1t);
  out[count++] = feature(15, wordOf(codes, s2), tagOf(codes, s2));
  // pairs
  out[count++] = feature(20, s0w, s0t, b0w, b0t);
  out[count++] = feature(21, s0w, s0t, b0w);
  out[count++] = feature(22, s0w, b0w, b0t);
  out[count++] = feature(23, s0w, s0t, b0t);
  out[count++] = feature(24, s0t, b0w, b0t);
  out[count++] = feature(25, s0w, b0w);
  out[count++] = feature(26, s0t, b0t);
  out[count++] = feature(27, b0t, b1t);
  out[count++] = feature(28, s1w, s1t, s0w, s0t);
  out[count++] = feature(29, s1t, s0t);
  out[count++] = feature(30, s1w, s0w);
  out[count++] = feature(31, s1t, s0w);
  out[count++] = feature(32, s1w, s0t);
  out[count++] = feature(33, b0w, b1w);
  // triples of tags
  out[count++] = feature(40, b0t, b1t, b2t);
  out[count++] = feature(41, s0t, b0t, b1t);
  out[count++] = feature(42, s1t, s0t, b0t);
  out[count++] = feature(43, s0t, tagOf(codes, s0L), b0t);
  out[count++] = feature(44, s0t, tagOf(codes, s0R), b0t);
  out[count++] = feature(45, s0t, b0t, tagOf(codes, b0L));
  out[count++] = feature(46, s1t, s0t, tagOf(codes, s0L));
  out[count++] = feature(47, s1t, s0t, tagOf(codes, s0R));
  out[count++] = feature(48, s1t, tagOf(codes, s1R), s0t);
  out[count++] = feature(49, tagOf(codes, s2), s1t, s0t);
  out[count++] = feature(50, s0w, b0t, b1t);
  out[count++] = feature(51, s0t, b0w, b1t);
  out[count++] = feature(52, s1t, s1L === NONE ? NULL_TAG : tagOf(codes, s1L), s0t);
  return count;
}

/** Distance and valency features, written from `out[count]`; returns the new count. */
function distanceFeatures(state: State, codes: Codes, out: Int32Array, count: number): number {
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
  out[count++] = feature(60, s0w, distance);
  out[count++] = feature(61, s0t, distance);
  out[count++] = feature(62, b0w, distance);
  out[count++] = feature(63, b0t, distance);
  out[count++] = feature(64, s0w, b0w, distance);
  out[count++] = feature(65, s0t, b0t, distance);
  out[count++] = feature(66, s1t, s0t, s1s0d);
  out[count++] = feature(67, s1w, s0w, s1s0d);
  // valency
  out[count++] = feature(70, s0w, s0vr);
  out[count++] = feature(71, s0t, s0vr);
  out[count++] = feature(72, s0w, s0vl);
  out[count++] = feature(73, s0t, s0vl);
  out[count++] = feature(74, b0w, b0vl);
  out[count++] = feature(75, b0t, b0vl);
  return count;
}

/** Features of the dependents built so far (words, tags, relations, relation sets), written from `out[count]`; returns the new count. */
function childFeatures(state: State, codes: Codes, out: Int32Array, count: number): number {
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
  out[count++] = feature(80, wordOf(codes, s0L));
  out[count++] = feature(81, tagOf(codes, s0L));
  out[count++] = feature(82, labelOf(state, s0L));
  out[count++] = feature(83, wordOf(codes, s0R));
  out[count++] = feature(84, tagOf(codes, s0R));
  out[count++] = feature(85, labelOf(state, s0R));
  out[count++] = feature(86, wordOf(codes, b0L));
  out[count++] = feature(87, tagOf(codes, b0L));
  out[count++] = feature(88, labelOf(state, b0L));
  out[count++] = feature(89, labelOf(state, s1R), s1t);
  // third order
  out[count++] = feature(90, wordOf(codes, s0L2));
  out[count++] = feature(91, tagOf(codes, s0L2));
  out[count++] = feature(92, labelOf(state, s0L2));
  out[count++] = feature(93, wordOf(codes, s0R2));
  out[count++] = feature(94, tagOf(codes, s0R2));
  out[count++] = feature(95, labelOf(state, s0R2));
  out[count++] = feature(96, wordOf(codes, b0L2));
  out[count++] = feature(97, tagOf(codes, b0L2));
  out[count++] = feature(98, labelOf(state, b0L2));
  out[count++] = feature(99, s0t, tagOf(codes, s0L), tagOf(codes, s0L2));
  out[count++] = feature(100, s0t, tagOf(codes, s0R), tagOf(codes, s0R2));
  out[count++] = feature(101, b0t, tagOf(codes, b0L), tagOf(codes, b0L2));
  // label sets
  out[count++] = feature(110, s0w, at(state.rightSetLo, s0), at(state.rightSetHi, s0));
  out[count++] = feature(111, s0t, at(state.rightSetLo, s0), at(state.rightSetHi, s0));
  out[count++] = feature(112, s0w, at(state.leftSetLo, s0), at(state.leftSetHi, s0));
  out[count++] = feature(113, s0t, at(state.leftSetLo, s0), at(state.leftSetHi, s0));
  out[count++] = feature(114, b0w, at(state.leftSetLo, b0), at(state.leftSetHi, b0));
  out[count++] = feature(115, b0t, at(state.leftSetLo, b0), at(state.leftSetHi, b0));
  // whether the buffer is exhausted and the root is next to s0 (the single-root constraint)
  out[count++] = feature(120, s0t, b0 === NONE ? 1 : 0, s1 === 0 ? 1 : 0);
  return count;
}

/** Writes the features of a state into `out` (at most MAX_FEATURES) and returns their count. */
export function extract(state: State, codes: Codes, out: Int32Array): number {
  return childFeatures(state, codes, out, distanceFeatures(state, codes, out, positionFeatures(state, codes, out)));
}
