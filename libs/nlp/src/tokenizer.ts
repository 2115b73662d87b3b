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
const CLITIC = /^(.*\p{L})((?:'|’|`)(?:s|m|d|ll|re|ve)|n(?:'|’)t)$/iu;

/** Splits text into surface tokens (EWT convention: punctuation apart, clitics kept inside their token). */
export function tokenize(text: string, lexicon: TokenizerLexicon): SurfaceToken[] {
  const tokens: SurfaceToken[] = [];
  const chunk = /\S+/g;
  for (let m = chunk.exec(text); m !== null; m = chunk.exec(text)) splitChunk(m[0], m.index, lexicon, tokens);
  return tokens;
}

function push(tokens: SurfaceToken[], text: string, start: number): void {
  if (text.length > 0) tokens.push({ text, start, end: start + text.length });
}

/** Length of the run of punctuation at `from` going forward (dir 1) or backward (dir -1). */
function runLength(s: string, from: number, dir: 1 | -1): number {
  const c = s[from]!;
  const endPunct = SENTENCE_END.has(c) || c === '…';
  let n = 1;
  for (let i = from + dir; i >= 0 && i < s.length; i += dir) {
    const d = s[i]!;
    if (d === c || (endPunct && (SENTENCE_END.has(d) || d === '…'))) n++;
    else break;
  }
  return n;
}

function splitChunk(chunk: string, offset: number, lexicon: TokenizerLexicon, tokens: SurfaceToken[]): void {
  if (EMOTICON.test(chunk)) return push(tokens, chunk, offset);
  let s = chunk;
  let start = offset;
  const tail: SurfaceToken[] = [];
  let openedQuote = false;
  // Peel opening punctuation off the front.
  while (s.length > 1 && OPENING.has(s[0]!) && !URL.test(s) && !EMOTICON.test(s)) {
    if (s[0] === "'" && /^'(?:s|m|d|ll|re|ve|\d0s)\b/i.test(s)) break;
    const n = runLength(s, 0, 1);
    if (n >= s.length) break;
    if (s[0] === "'" || s[0] === '‘' || s[0] === '`') openedQuote = true;
    push(tokens, s.slice(0, n), start);
    s = s.slice(n);
    start += n;
  }
  const url = URL.exec(s) ?? EMAIL.exec(s);
  if (url) {
    let u = url[0];
    while (u.length > 1 && /[.,;:!?)\]'"”’]$/.test(u)) u = u.slice(0, -1);
    push(tokens, u, start);
    if (u.length < s.length) splitChunk(s.slice(u.length), start + u.length, lexicon, tokens);
    return;
  }
  // Peel closing punctuation off the back.
  while (s.length > 1) {
    const last = s[s.length - 1]!;
    if (!CLOSING.has(last)) break;
    if (EMOTICON.test(s)) break;
    const lower = s.toLowerCase();
    if (last === '.' && (lexicon.abbreviations.has(lower) || INITIALS.test(s))) break;
    if ((last === "'" || last === '’') && !openedQuote && /\p{L}s['’]$/u.test(s)) break;
    const n = runLength(s, s.length - 1, -1);
    if (n >= s.length) break;
    tail.unshift({ text: s.slice(s.length - n), start: start + s.length - n, end: start + s.length });
    s = s.slice(0, s.length - n);
  }
  splitInner(s, start, lexicon, tokens);
  tokens.push(...tail);
}

function splitInner(s: string, start: number, lexicon: TokenizerLexicon, tokens: SurfaceToken[]): void {
  if (s.length === 0) return;
  const lower = s.toLowerCase();
  if (s.length === 1 || lexicon.abbreviations.has(lower) || lexicon.hyphenated.has(lower) || lexicon.multiwordTokens.has(lower)) return push(tokens, s, start);
  let m = TIME_UNIT.exec(s) ?? CURRENCY.exec(s) ?? PERCENT.exec(s);
  if (m) {
    push(tokens, m[1]!, start);
    push(tokens, m[2]!, start + m[1]!.length);
    return;
  }
  // Punctuation inside a word: split around it unless it joins digits (1,000 3:30 9/11 713-853-3989) or is an apostrophe.
  const inner = /[,;:!?()[\]{}"“”/&]|--+|-/g;
  for (m = inner.exec(s); m !== null; m = inner.exec(s)) {
    const i = m.index;
    const before = s[i - 1] ?? '';
    const after = s[i + m[0].length] ?? '';
    if (i === 0 || i + m[0].length === s.length) continue;
    const digits = /\d/.test(before) && /\d/.test(after);
    if (digits && m[0] !== '--') continue;
    if (m[0] === '&' && /^[\p{Lu}&]+$/u.test(s)) continue;
    if (m[0] === '/' && s.length <= 4) continue;
    if (m[0] === '-' && CLITIC.test(s.slice(0, i))) continue;
    if (m[0] === '-') {
      const word = /[\p{L}\p{N}]+(?:-[\p{L}\p{N}]+)+/u.exec(lower.slice(Math.max(0, lower.lastIndexOf(' ', i))));
      if (word && lexicon.hyphenated.has(word[0])) continue;
      if (/\d/.test(s)) continue;
    }
    splitInner(s.slice(0, i), start, lexicon, tokens);
    push(tokens, m[0], start + i);
    splitInner(s.slice(i + m[0].length), start + i + m[0].length, lexicon, tokens);
    return;
  }
  push(tokens, s, start);
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
  tokens.forEach((token, t) => {
    const parts = multiwordParts(token.text, lexicon);
    let at = token.start;
    for (const length of parts) {
      words.push({ text: token.text.slice(at - token.start, at - token.start + length), start: at, end: at + length, token: t });
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
  if (clitic && clitic[1]!.length > 0) {
    const host = clitic[1]!;
    const rest = clitic[2]!;
    // `n't` takes its n from the host's end: do|n't, ca|n't, wo|n't.
    if (/^n/i.test(rest)) return [host.length, rest.length];
    const inner = multiwordParts(host, lexicon);
    return [...inner, rest.length];
  }
  return [text.length];
}
