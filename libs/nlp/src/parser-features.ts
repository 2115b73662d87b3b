import { itemAt } from './checked.js';
import { feature, hashString } from './hashing.js';
import { NONE, NULL_LABEL, type State } from './parser-state.js';

// The features the arc-hybrid parser (parser.ts) scores a state by.

/** A sentence to parse: word forms and tag codes (any integer coding of the predicted tags). */
export interface ParserInput {
  readonly words: readonly string[];
  readonly tags: readonly number[];
  /** Hashes of the lower-cased words (`WordCodes.lower`) when the caller has them, so they are not hashed again. */
  readonly lowerCodes?: Int32Array;
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
    word[position + 1] = input.lowerCodes ? input.lowerCodes[position]! : hashString(itemAt(input.words, position, 'input.words').toLowerCase());
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

/**
 * What the features of one state look at, in the parser's notation: s0, s1, s2 are the stack from its
 * top, b0, b1, b2 the buffer from its front (NONE where there is no such word); Left/Right are a word's
 * leftmost/rightmost dependent so far, SecondLeft/SecondRight the next ones in; Word and Tag are codes.
 * `extract` fills it once per state and each feature group reads it, so every position and code is
 * derived once; callers keep one per decoder and reuse it, so extraction allocates nothing.
 */
export class FeatureWindow {
  s0 = NONE;
  s1 = NONE;
  s2 = NONE;
  b0 = NONE;
  b1 = NONE;
  b2 = NONE;
  s0Left = NONE;
  s0SecondLeft = NONE;
  s0Right = NONE;
  s0SecondRight = NONE;
  b0Left = NONE;
  b0SecondLeft = NONE;
  s1Left = NONE;
  s1Right = NONE;
  s0Word = NULL_WORD;
  s0Tag = NULL_TAG;
  s1Word = NULL_WORD;
  s1Tag = NULL_TAG;
  b0Word = NULL_WORD;
  b0Tag = NULL_TAG;
  b1Word = NULL_WORD;
  b1Tag = NULL_TAG;
  b2Tag = NULL_TAG;
  s0LeftTag = NULL_TAG;
  s0RightTag = NULL_TAG;
  b0LeftTag = NULL_TAG;

  /** Reads the positions, nearest dependents and their codes of `state`. */
  fill(state: State, codes: Codes): void {
    this.s0 = state.stackItem(0);
    this.s1 = state.stackItem(1);
    this.s2 = state.stackItem(2);
    this.b0 = state.bufferItem(0);
    this.b1 = state.bufferItem(1);
    this.b2 = state.bufferItem(2);
    this.s0Left = at(state.leftmostChild, this.s0);
    this.s0SecondLeft = at(state.secondLeftmostChild, this.s0);
    this.s0Right = at(state.rightmostChild, this.s0);
    this.s0SecondRight = at(state.secondRightmostChild, this.s0);
    this.b0Left = at(state.leftmostChild, this.b0);
    this.b0SecondLeft = at(state.secondLeftmostChild, this.b0);
    this.s1Left = at(state.leftmostChild, this.s1);
    this.s1Right = at(state.rightmostChild, this.s1);
    this.s0Word = wordOf(codes, this.s0);
    this.s0Tag = tagOf(codes, this.s0);
    this.s1Word = wordOf(codes, this.s1);
    this.s1Tag = tagOf(codes, this.s1);
    this.b0Word = wordOf(codes, this.b0);
    this.b0Tag = tagOf(codes, this.b0);
    this.b1Word = wordOf(codes, this.b1);
    this.b1Tag = tagOf(codes, this.b1);
    this.b2Tag = tagOf(codes, this.b2);
    this.s0LeftTag = tagOf(codes, this.s0Left);
    this.s0RightTag = tagOf(codes, this.s0Right);
    this.b0LeftTag = tagOf(codes, this.b0Left);
  }
}

/** Features of the words at the top of the stack and the front of the buffer, alone, in pairs and with their nearest dependents' tags. */
function positionFeatures(codes: Codes, window: FeatureWindow, out: Int32Array): number {
  const { s0Word, s0Tag, s1Word, s1Tag, b0Word, b0Tag, b1Word, b1Tag, b2Tag } = window;
  const s2Tag = tagOf(codes, window.s2);
  let count = 0;
  // single positions
  out[count++] = feature(1, s0Word, s0Tag);
  out[count++] = feature(2, s0Word);
  out[count++] = feature(3, s0Tag);
  out[count++] = feature(4, b0Word, b0Tag);
  out[count++] = feature(5, b0Word);
  out[count++] = feature(6, b0Tag);
  out[count++] = feature(7, b1Word, b1Tag);
  out[count++] = feature(8, b1Word);
  out[count++] = feature(9, b1Tag);
  out[count++] = feature(10, wordOf(codes, window.b2), b2Tag);
  out[count++] = feature(11, b2Tag);
  out[count++] = feature(12, s1Word, s1Tag);
  out[count++] = feature(13, s1Word);
  out[count++] = feature(14, s1Tag);
  out[count++] = feature(15, wordOf(codes, window.s2), s2Tag);
  // pairs
  out[count++] = feature(20, s0Word, s0Tag, b0Word, b0Tag);
  out[count++] = feature(21, s0Word, s0Tag, b0Word);
  out[count++] = feature(22, s0Word, b0Word, b0Tag);
  out[count++] = feature(23, s0Word, s0Tag, b0Tag);
  out[count++] = feature(24, s0Tag, b0Word, b0Tag);
  out[count++] = feature(25, s0Word, b0Word);
  out[count++] = feature(26, s0Tag, b0Tag);
  out[count++] = feature(27, b0Tag, b1Tag);
  out[count++] = feature(28, s1Word, s1Tag, s0Word, s0Tag);
  out[count++] = feature(29, s1Tag, s0Tag);
  out[count++] = feature(30, s1Word, s0Word);
  out[count++] = feature(31, s1Tag, s0Word);
  out[count++] = feature(32, s1Word, s0Tag);
  out[count++] = feature(33, b0Word, b1Word);
  // triples of tags
  out[count++] = feature(40, b0Tag, b1Tag, b2Tag);
  out[count++] = feature(41, s0Tag, b0Tag, b1Tag);
  out[count++] = feature(42, s1Tag, s0Tag, b0Tag);
  out[count++] = feature(43, s0Tag, window.s0LeftTag, b0Tag);
  out[count++] = feature(44, s0Tag, window.s0RightTag, b0Tag);
  out[count++] = feature(45, s0Tag, b0Tag, window.b0LeftTag);
  out[count++] = feature(46, s1Tag, s0Tag, window.s0LeftTag);
  out[count++] = feature(47, s1Tag, s0Tag, window.s0RightTag);
  out[count++] = feature(48, s1Tag, tagOf(codes, window.s1Right), s0Tag);
  out[count++] = feature(49, s2Tag, s1Tag, s0Tag);
  out[count++] = feature(50, s0Word, b0Tag, b1Tag);
  out[count++] = feature(51, s0Tag, b0Word, b1Tag);
  out[count++] = feature(52, s1Tag, tagOf(codes, window.s1Left), s0Tag);
  return count;
}

/** Distance and valency features, written from `out[count]`; returns the new count. */
function distanceFeatures(state: State, window: FeatureWindow, out: Int32Array, count: number): number {
  const { s0, s1, b0, s0Word, s0Tag, s1Word, s1Tag, b0Word, b0Tag } = window;
  const distance = s0 === NONE || b0 === NONE || s0 === 0 ? 0 : Math.min(b0 - s0, MAX_DISTANCE);
  const s1s0Distance = s1 === NONE || s0 === NONE || s1 === 0 ? 0 : Math.min(s0 - s1, MAX_DISTANCE);
  const s0LeftValency = s0 === NONE ? 0 : state.leftValency[s0]!;
  const s0RightValency = s0 === NONE ? 0 : state.rightValency[s0]!;
  const b0LeftValency = b0 === NONE ? 0 : state.leftValency[b0]!;
  // distance
  out[count++] = feature(60, s0Word, distance);
  out[count++] = feature(61, s0Tag, distance);
  out[count++] = feature(62, b0Word, distance);
  out[count++] = feature(63, b0Tag, distance);
  out[count++] = feature(64, s0Word, b0Word, distance);
  out[count++] = feature(65, s0Tag, b0Tag, distance);
  out[count++] = feature(66, s1Tag, s0Tag, s1s0Distance);
  out[count++] = feature(67, s1Word, s0Word, s1s0Distance);
  // valency
  out[count++] = feature(70, s0Word, s0RightValency);
  out[count++] = feature(71, s0Tag, s0RightValency);
  out[count++] = feature(72, s0Word, s0LeftValency);
  out[count++] = feature(73, s0Tag, s0LeftValency);
  out[count++] = feature(74, b0Word, b0LeftValency);
  out[count++] = feature(75, b0Tag, b0LeftValency);
  return count;
}

/** Features of the dependents built so far (words, tags, relations, relation sets), written from `out[count]`; returns the new count. */
function childFeatures(state: State, codes: Codes, window: FeatureWindow, out: Int32Array, count: number): number {
  const { s0, b0, s0Left, s0SecondLeft, s0Right, s0SecondRight, b0Left, b0SecondLeft, s0Word, s0Tag, b0Word, b0Tag } = window;
  const s0SecondLeftTag = tagOf(codes, s0SecondLeft);
  const s0SecondRightTag = tagOf(codes, s0SecondRight);
  const b0SecondLeftTag = tagOf(codes, b0SecondLeft);
  // children
  out[count++] = feature(80, wordOf(codes, s0Left));
  out[count++] = feature(81, window.s0LeftTag);
  out[count++] = feature(82, labelOf(state, s0Left));
  out[count++] = feature(83, wordOf(codes, s0Right));
  out[count++] = feature(84, window.s0RightTag);
  out[count++] = feature(85, labelOf(state, s0Right));
  out[count++] = feature(86, wordOf(codes, b0Left));
  out[count++] = feature(87, window.b0LeftTag);
  out[count++] = feature(88, labelOf(state, b0Left));
  out[count++] = feature(89, labelOf(state, window.s1Right), window.s1Tag);
  // third order
  out[count++] = feature(90, wordOf(codes, s0SecondLeft));
  out[count++] = feature(91, s0SecondLeftTag);
  out[count++] = feature(92, labelOf(state, s0SecondLeft));
  out[count++] = feature(93, wordOf(codes, s0SecondRight));
  out[count++] = feature(94, s0SecondRightTag);
  out[count++] = feature(95, labelOf(state, s0SecondRight));
  out[count++] = feature(96, wordOf(codes, b0SecondLeft));
  out[count++] = feature(97, b0SecondLeftTag);
  out[count++] = feature(98, labelOf(state, b0SecondLeft));
  out[count++] = feature(99, s0Tag, window.s0LeftTag, s0SecondLeftTag);
  out[count++] = feature(100, s0Tag, window.s0RightTag, s0SecondRightTag);
  out[count++] = feature(101, b0Tag, window.b0LeftTag, b0SecondLeftTag);
  // label sets
  const s0RightSetLow = at(state.rightSetLo, s0);
  const s0RightSetHigh = at(state.rightSetHi, s0);
  const s0LeftSetLow = at(state.leftSetLo, s0);
  const s0LeftSetHigh = at(state.leftSetHi, s0);
  const b0LeftSetLow = at(state.leftSetLo, b0);
  const b0LeftSetHigh = at(state.leftSetHi, b0);
  out[count++] = feature(110, s0Word, s0RightSetLow, s0RightSetHigh);
  out[count++] = feature(111, s0Tag, s0RightSetLow, s0RightSetHigh);
  out[count++] = feature(112, s0Word, s0LeftSetLow, s0LeftSetHigh);
  out[count++] = feature(113, s0Tag, s0LeftSetLow, s0LeftSetHigh);
  out[count++] = feature(114, b0Word, b0LeftSetLow, b0LeftSetHigh);
  out[count++] = feature(115, b0Tag, b0LeftSetLow, b0LeftSetHigh);
  // whether the buffer is exhausted and the root is next to s0 (the single-root constraint)
  out[count++] = feature(120, s0Tag, b0 === NONE ? 1 : 0, window.s1 === 0 ? 1 : 0);
  return count;
}

/**
 * Writes the features of a state into `out` (at most MAX_FEATURES) and returns their count; `window`
 * is the caller's scratch, overwritten.
 */
export function extract(state: State, codes: Codes, window: FeatureWindow, out: Int32Array): number {
  window.fill(state, codes);
  const count = positionFeatures(codes, window, out);
  return childFeatures(state, codes, window, out, distanceFeatures(state, window, out, count));
}
