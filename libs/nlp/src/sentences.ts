import { feature, hashString, random, shuffle } from './hashing.js';
import { shape } from './features.js';
import { Perceptron } from './perceptron.js';
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
  const c = token[0]!;
  if (c >= 'A' && c <= 'Z') return 1;
  if (c >= 'a' && c <= 'z') return 2;
  if (c >= '0' && c <= '9') return 3;
  return hashString(c);
}

function spaceKind(space: string): number {
  if (space === '') return 0;
  if (PARAGRAPH.test(space)) return 3;
  if (space.includes('\n')) return 2;
  return 1;
}

function extract(tokens: readonly string[], spaces: readonly string[], i: number, lexicon: TokenizerLexicon, out: Int32Array): number {
  const t = tokens[i]!;
  const lower = t.toLowerCase();
  const next = tokens[i + 1];
  const next2 = tokens[i + 2];
  const prev = tokens[i - 1];
  const w = hashString(lower);
  const nw = next === undefined ? 0 : hashString(next.toLowerCase());
  const pw = prev === undefined ? 0 : hashString(prev.toLowerCase());
  const nk = kind(next);
  const sp = spaceKind(spaces[i] ?? '');
  const end = END_PUNCT.test(t) ? 1 : 0;
  let n = 0;
  out[n++] = feature(1, 0);
  out[n++] = feature(2, w);
  out[n++] = feature(3, nw);
  out[n++] = feature(4, pw);
  out[n++] = feature(5, nk);
  out[n++] = feature(6, sp);
  out[n++] = feature(7, end, nk);
  out[n++] = feature(8, w, nk);
  out[n++] = feature(9, hashString(shape(t)), hashString(shape(next ?? '')));
  out[n++] = feature(10, lexicon.abbreviations.has(lower) ? 1 : 0, nk);
  out[n++] = feature(11, t.endsWith('.') ? 1 : 0, nk, sp);
  out[n++] = feature(12, pw, w);
  out[n++] = feature(13, w, nw);
  out[n++] = feature(14, end, kind(next2), nk);
  out[n++] = feature(15, Math.min(t.length, 8), end);
  out[n++] = feature(16, sp, nk, end);
  out[n++] = feature(17, hashString(shape(prev ?? '')), w);
  return n;
}

/** Indices of the tokens that end a sentence (the last token always does; a blank line always ends one). */
export function sentenceEnds(model: SplitterModel, text: string, tokens: readonly SurfaceToken[], lexicon: TokenizerLexicon): number[] {
  const texts = tokens.map((t) => t.text);
  const spaces = tokens.map((t, i) => text.slice(t.end, tokens[i + 1]?.start ?? text.length));
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(2);
  const ends: number[] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (i === tokens.length - 1 || PARAGRAPH.test(spaces[i]!)) {
      ends.push(i);
      continue;
    }
    const n = extract(texts, spaces, i, lexicon, feats);
    model.perceptron.score(feats, n, scores);
    if (scores[1]! > scores[0]!) ends.push(i);
  }
  return ends;
}

/** Trains the splitter on documents with gold sentence ends. */
export function trainSplitter(
  examples: readonly SplitterExample[],
  lexicon: TokenizerLexicon,
  options: { epochs: number; seed: number; bits: number },
): SplitterModel {
  const perceptron = new Perceptron(2, options.bits);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(2);
  const next = random(options.seed);
  const order = [...examples];
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    shuffle(order, next);
    for (const ex of order) {
      for (let i = 0; i < ex.tokens.length - 1; i++) {
        if (PARAGRAPH.test(ex.spaces[i]!)) continue;
        const n = extract(ex.tokens, ex.spaces, i, lexicon, feats);
        perceptron.score(feats, n, scores);
        const guess = scores[1]! > scores[0]! ? 1 : 0;
        perceptron.tick();
        perceptron.update(feats, n, ex.ends[i] ? 1 : 0, guess);
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
    sentences.push(splitWords(tokens.slice(first, end + 1), lexicon).map((w) => ({ ...w, token: w.token + first })));
    start = end + 1;
  }
  return sentences;
}
