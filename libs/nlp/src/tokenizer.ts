/** A surface token: a maximal piece of the text the treebank counts as one token, with its offsets. */
export interface SurfaceToken {
  readonly text: string;
  /** Offsets into the original text, end exclusive: `text.slice(start, end) === this.text`. */
  readonly start: number;
  readonly end: number;
}

/** What the tokenizer learned from the treebank: abbreviations, hyphenated words kept whole, multi-word tokens. */
export interface TokenizerLexicon {
  /** Lower-cased tokens ending in `.` that the treebank keeps whole (`dr.`, `u.s.`, `etc.`). */
  readonly abbreviations: ReadonlySet<string>;
  /** Lower-cased hyphenated tokens the treebank keeps whole (`e-mail`, `co-workers`). */
  readonly hyphenated: ReadonlySet<string>;
  /** Lower-cased multi-word tokens and the lengths of their parts (`cannot` → [3, 3], `dont` → [2, 2]). */
  readonly multiwordTokens: ReadonlyMap<string, readonly number[]>;
  /** Lower-cased prefixes whose hyphenated words the treebank keeps whole (`non-Microsoft`, `re-wording`). */
  readonly hyphenPrefixes: ReadonlySet<string>;
}

const URL = /^(?:(?:https?|ftp):\/\/|www\.)[^\s<>"]+/i;
const EMAIL = /^[\w.+-]+@[\w-]+(?:\.[\w-]+)+/;
const EMOTICON = /^(?:[:;=8xX][-o^']?[)(\][dDpP/\\|*3]+|\^_\^|<3|:-?\)+|:'\()$/;
const OPENING = new Set(['"', "'", '`', '(', '[', '{', '<', '“', '‘', '«', '*']);
const CLOSING = new Set(['.', ',', ';', ':', '!', '?', '"', "'", ')', ']', '}', '>', '”', '’', '»', '…', '*']);
const SENTENCE_END = new Set(['.', '!', '?']);
const INITIALS = /^(?:\p{L}\.)+$/u;
const TIME_UNIT = /^(\d+(?:[:.]\d+)?)(am|pm|a\.m\.|p\.m\.)$/i;
const CURRENCY = /^([$£€¥])(\d[\d,.]*)$/;
const PERCENT = /^(\d[\d,.]*)(%)$/;
const END_RUN = /^[.!?…]+$/;
const LEADING = /^(?:\.{2,}|…+|[([{])$/;
const CLITIC = /^(.*\p{L})((?:'|’|`)(?:s|m|d|ll|re|ve)|n(?:'|’)t)$/iu;

/** Splits text into surface tokens (EWT convention: punctuation apart, clitics kept inside their token). */
export function tokenize(text: string, lexicon: TokenizerLexicon): SurfaceToken[] {
  const tokens: SurfaceToken[] = [];
  const chunk = /\S+/g;
  for (let match = chunk.exec(text); match !== null; match = chunk.exec(text)) splitChunk(match[0], match.index, lexicon, tokens);
  return tokens;
}

function push(tokens: SurfaceToken[], text: string, start: number): void {
  if (text.length > 0) tokens.push({ text, start, end: start + text.length });
}

/** Length of the run of punctuation at `from` going forward (dir 1) or backward (dir -1). */
function runLength(text: string, from: number, dir: 1 | -1): number {
  const character = itemAt(text, from, 'text');
  const endPunct = SENTENCE_END.has(character) || character === '…';
  let run = 1;
  for (let position = from + dir; position >= 0 && position < text.length; position += dir) {
    const other = itemAt(text, position, 'text');
    if (other === character || (endPunct && (SENTENCE_END.has(other) || other === '…'))) run++;
    else break;
  }
  return run;
}

function splitChunk(chunk: string, offset: number, lexicon: TokenizerLexicon, tokens: SurfaceToken[]): void {
  if (EMOTICON.test(chunk)) return push(tokens, chunk, offset);
  let rest = chunk;
  let start = offset;
  const tail: SurfaceToken[] = [];
  let openedQuote = false;
  // Peel opening punctuation off the front.
  // A hyphen before a word or number is split off too ("-Page", "-0.39"), as the treebank mostly does.
  while (rest.length > 1 && (OPENING.has(itemAt(rest, 0, 'rest')) || /^-[\p{L}\p{N}]/u.test(rest)) && !URL.test(rest) && !EMOTICON.test(rest)) {
    if (rest[0] === "'" && /^'(?:s|m|d|ll|re|ve|\d0s)\b/i.test(rest)) break;
    const run = runLength(rest, 0, 1);
    if (run >= rest.length) break;
    if (rest[0] === "'" || rest[0] === '‘' || rest[0] === '`') openedQuote = true;
    push(tokens, rest.slice(0, run), start);
    rest = rest.slice(run);
    start += run;
  }
  const url = URL.exec(rest) ?? EMAIL.exec(rest);
  if (url) {
    let link = url[0];
    while (link.length > 1 && /[.,;:!?)\]'"”’]$/.test(link)) link = link.slice(0, -1);
    push(tokens, link, start);
    if (link.length < rest.length) splitChunk(rest.slice(link.length), start + link.length, lexicon, tokens);
    return;
  }
  // Peel closing punctuation off the back.
  while (rest.length > 1) {
    const last = itemAt(rest, rest.length - 1, 'rest');
    // Hyphens after a word ("service-", "speech--") are split off: the treebank always does.
    if (!CLOSING.has(last) && !(last === '-' && /\p{L}-+$/u.test(rest))) break;
    if (EMOTICON.test(rest)) break;
    const lower = rest.toLowerCase();
    if (last === '.' && (lexicon.abbreviations.has(lower) || INITIALS.test(rest))) break;
    if ((last === "'" || last === '’') && !openedQuote && /\p{L}s['’]$/u.test(rest)) break;
    const run = runLength(rest, rest.length - 1, -1);
    if (run >= rest.length) break;
    tail.unshift({ text: rest.slice(rest.length - run), start: start + rest.length - run, end: start + rest.length });
    rest = rest.slice(0, rest.length - run);
  }
  splitInner(rest, start, lexicon, tokens);
  tokens.push(...tail);
}

function splitInner(text: string, start: number, lexicon: TokenizerLexicon, tokens: SurfaceToken[]): void {
  if (text.length === 0) return;
  const lower = text.toLowerCase();
  if (text.length === 1 || lexicon.abbreviations.has(lower) || lexicon.hyphenated.has(lower) || lexicon.multiwordTokens.has(lower))
    return push(tokens, text, start);
  // Runs of end punctuation ("!!!") and emoticons stay whole, as at the edges of a chunk.
  if (END_RUN.test(text) || EMOTICON.test(text)) return push(tokens, text, start);
  // An address after a bracket or quote inside a chunk ("Julie"<julie...@bellsouth.net>) stays whole.
  const opening = OPENING.has(itemAt(text, 0, 'text')) ? 1 : 0;
  const link = URL.exec(text.slice(opening)) ?? EMAIL.exec(text.slice(opening));
  if (link && opening + link[0].length === text.length) {
    if (opening) push(tokens, text.slice(0, 1), start);
    return push(tokens, text.slice(opening), start + opening);
  }
  let match = TIME_UNIT.exec(text) ?? CURRENCY.exec(text) ?? PERCENT.exec(text);
  if (match) {
    push(tokens, itemAt(match, 1, 'match'), start);
    push(tokens, itemAt(match, 2, 'match'), start + itemAt(match, 1, 'match').length);
    return;
  }
  // Punctuation inside a word: split around it unless it joins digits (1,000 3:30 9/11 713-853-3989) or is an apostrophe.
  const inner = /[,;:!?()[\]{}"“”/&]|--+|-|\.{2,}|…+/g;
  for (match = inner.exec(text); match !== null; match = inner.exec(text)) {
    const position = match.index;
    const before = text[position - 1] ?? '';
    const after = text[position + match[0].length] ?? '';
    if (position + match[0].length === text.length) continue;
    if (position === 0) {
      // An ellipsis or an opening bracket before a word ("...Now", the "(See" of "file.pdf)(See") is a token of its own.
      if (!LEADING.test(match[0])) continue;
      push(tokens, match[0], start);
      splitInner(text.slice(match[0].length), start + match[0].length, lexicon, tokens);
      return;
    }
    const digits = /\d/.test(before) && /\d/.test(after);
    if (digits && match[0] !== '--') continue;
    if (match[0] === '&' && /^[\p{Lu}&]+$/u.test(text)) continue;
    if (match[0] === '/' && text.length <= 4) continue;
    if (match[0] === '-' && CLITIC.test(text.slice(0, position))) continue;
    if (match[0] === '-') {
      const word = /[\p{L}\p{N}]+(?:-[\p{L}\p{N}]+)+/u.exec(lower.slice(Math.max(0, lower.lastIndexOf(' ', position))));
      if (word && lexicon.hyphenated.has(word[0])) continue;
      if (/^\p{L}+$/u.test(text.slice(0, position)) && lexicon.hyphenPrefixes.has(lower.slice(0, position))) continue;
      // A number before a word is split off ("15 - year", "18,000 - person"); other hyphens next to digits join.
      if (/\d/.test(text) && !(/^[\d,.]+$/.test(text.slice(0, position)) && /^\p{L}+$/u.test(text.slice(position + 1)))) continue;
    }
    splitInner(text.slice(0, position), start, lexicon, tokens);
    push(tokens, match[0], start + position);
    splitInner(text.slice(position + match[0].length), start + position + match[0].length, lexicon, tokens);
    return;
  }
  push(tokens, text, start);
}

/** One syntactic word of a surface token; offsets are those of its characters, or the whole token's. */
export interface Word {
  readonly text: string;
  readonly start: number;
  readonly end: number;
  /** Index of the surface token the word belongs to. */
  readonly token: number;
}

/** Splits multi-word tokens into words (`don't` → `do` `n't`, `Bush's` → `Bush` `'s`, `cannot` → `can` `not`). */
export function splitWords(tokens: readonly SurfaceToken[], lexicon: TokenizerLexicon): Word[] {
  const words: Word[] = [];
  tokens.forEach((token, tokenIndex) => {
    const parts = multiwordParts(token.text, lexicon);
    let at = token.start;
    for (const length of parts) {
      words.push({ text: token.text.slice(at - token.start, at - token.start + length), start: at, end: at + length, token: tokenIndex });
      at += length;
    }
  });
  return words;
}

/** Lengths of the words a token splits into (one length when it is a single word). */
export function multiwordParts(text: string, lexicon: TokenizerLexicon): readonly number[] {
  const known = lexicon.multiwordTokens.get(text.toLowerCase());
  if (known) return known;
  const clitic = CLITIC.exec(text);
  if (clitic && itemAt(clitic, 1, 'clitic').length > 0) {
    const host = itemAt(clitic, 1, 'clitic');
    const rest = itemAt(clitic, 2, 'clitic');
    // `n't` takes its n from the host's end: do|n't, ca|n't, wo|n't.
    if (/^n/i.test(rest)) return [host.length, rest.length];
    const inner = multiwordParts(host, lexicon);
    return [...inner, rest.length];
  }
  return [text.length];
}
import { itemAt } from './checked.js';
