import { itemAt } from './checked.js';
import { feature, hashString, random, shuffle } from './hashing.js';
import { shape } from './features.js';
import { Perceptron, type PerceptronTrainOptions } from './perceptron.js';
import { splitWords, tokenize, type SurfaceToken, type TokenizerLexicon, type Word } from './tokenizer.js';

/** A sentence splitter: a binary averaged perceptron deciding after each token whether a sentence ends. */
export interface SplitterModel {
  readonly perceptron: Perceptron;
}

/** A training document: surface token texts, the whitespace after each, and which end a sentence. */
export interface SplitterExample {
  readonly tokens: readonly string[];
  readonly spaces: readonly string[];
  readonly ends: readonly boolean[];
}

const MAX_FEATURES = 24;
const PARAGRAPH = /\n\s*\n/;
const END_PUNCT = /^[.!?…]+$/;

function kind(token: string | undefined): number {
  if (token === undefined) return 0;
  const first = itemAt(token, 0, 'token');
  if (first >= 'A' && first <= 'Z') return 1;
  if (first >= 'a' && first <= 'z') return 2;
  if (first >= '0' && first <= '9') return 3;
  return hashString(first);
}

function spaceKind(space: string): number {
  if (space === '') return 0;
  if (PARAGRAPH.test(space)) return 3;
  if (space.includes('\n')) return 2;
  return 1;
}

function extract(tokens: readonly string[], spaces: readonly string[], position: number, lexicon: TokenizerLexicon, out: Int32Array): number {
  const token = itemAt(tokens, position, 'tokens');
  const lower = token.toLowerCase();
  const next = tokens[position + 1];
  const next2 = tokens[position + 2];
  const prev = tokens[position - 1];
  const word = hashString(lower);
  const nextWord = next === undefined ? 0 : hashString(next.toLowerCase());
  const previousWord = prev === undefined ? 0 : hashString(prev.toLowerCase());
  const nextKind = kind(next);
  const spaceCode = spaceKind(spaces[position] ?? '');
  const end = END_PUNCT.test(token) ? 1 : 0;
  let count = 0;
  out[count++] = feature(1, 0);
  out[count++] = feature(2, word);
  out[count++] = feature(3, nextWord);
  out[count++] = feature(4, previousWord);
  out[count++] = feature(5, nextKind);
  out[count++] = feature(6, spaceCode);
  out[count++] = feature(7, end, nextKind);
  out[count++] = feature(8, word, nextKind);
  out[count++] = feature(9, hashString(shape(token)), hashString(shape(next ?? '')));
  out[count++] = feature(10, lexicon.abbreviations.has(lower) ? 1 : 0, nextKind);
  out[count++] = feature(11, token.endsWith('.') ? 1 : 0, nextKind, spaceCode);
  out[count++] = feature(12, previousWord, word);
  out[count++] = feature(13, word, nextWord);
  out[count++] = feature(14, end, kind(next2), nextKind);
  out[count++] = feature(15, Math.min(token.length, 8), end);
  out[count++] = feature(16, spaceCode, nextKind, end);
  out[count++] = feature(17, hashString(shape(prev ?? '')), word);
  return count;
}

/** Indices of the tokens that end a sentence (the last token always does; a blank line always ends one). */
export function sentenceEnds(model: SplitterModel, text: string, tokens: readonly SurfaceToken[], lexicon: TokenizerLexicon): number[] {
  const texts = tokens.map((token) => token.text);
  const spaces = tokens.map((token, position) => text.slice(token.end, tokens[position + 1]?.start ?? text.length));
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(2);
  const ends: number[] = [];
  for (let position = 0; position < tokens.length; position++) {
    if (position === tokens.length - 1 || PARAGRAPH.test(itemAt(spaces, position, 'spaces'))) {
      ends.push(position);
      continue;
    }
    const count = extract(texts, spaces, position, lexicon, feats);
    model.perceptron.score(feats, count, scores);
    if (scores[1]! > scores[0]!) ends.push(position);
  }
  return ends;
}

/** Trains the splitter on documents with gold sentence ends. */
export function trainSplitter(examples: readonly SplitterExample[], lexicon: TokenizerLexicon, options: PerceptronTrainOptions): SplitterModel {
  const perceptron = new Perceptron(2, options.bits);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(2);
  const next = random(options.seed);
  const order = [...examples];
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    shuffle(order, next);
    for (const example of order) {
      for (let position = 0; position < example.tokens.length - 1; position++) {
        if (PARAGRAPH.test(itemAt(example.spaces, position, 'example.spaces'))) continue;
        const count = extract(example.tokens, example.spaces, position, lexicon, feats);
        perceptron.score(feats, count, scores);
        const guess = scores[1]! > scores[0]! ? 1 : 0;
        perceptron.tick();
        perceptron.update(feats, count, example.ends[position] ? 1 : 0, guess);
      }
    }
  }
  perceptron.average();
  return { perceptron };
}

/** Tokenizes text and splits it into sentences of words (word.token indexes the document's surface tokens). */
export function segmentText(text: string, lexicon: TokenizerLexicon, splitter: SplitterModel, split = true): Word[][] {
  const tokens = tokenize(text, lexicon);
  if (tokens.length === 0) return [];
  const ends = split ? sentenceEnds(splitter, text, tokens, lexicon) : [tokens.length - 1];
  const sentences: Word[][] = [];
  let start = 0;
  for (const end of ends) {
    const first = start;
    sentences.push(splitWords(tokens.slice(first, end + 1), lexicon).map((word) => ({ ...word, token: word.token + first })));
    start = end + 1;
  }
  return sentences;
}
