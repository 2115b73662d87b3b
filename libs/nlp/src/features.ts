import { hashString } from './hashing.js';

/** Word shape: X for upper case, x lower, d digit, other characters kept; runs capped at two. */
export function shape(word: string): string {
  let out = '';
  let last = '';
  let run = 0;
  for (const ch of word.length > 24 ? word.slice(0, 24) : word) {
    const c =
      ch >= 'A' && ch <= 'Z'
        ? 'X'
        : ch >= 'a' && ch <= 'z'
          ? 'x'
          : ch >= '0' && ch <= '9'
            ? 'd'
            : ch.toLowerCase() !== ch
              ? 'X'
              : ch.toUpperCase() !== ch
                ? 'x'
                : ch;
    if (c === last) {
      run++;
      if (run > 2) continue;
    } else {
      last = c;
      run = 1;
    }
    out += c;
  }
  return out;
}

/** Integer codes of one word's string features, computed once per sentence. */
export interface WordCodes {
  readonly form: Int32Array;
  readonly lower: Int32Array;
  readonly suffix1: Int32Array;
  readonly suffix2: Int32Array;
  readonly suffix3: Int32Array;
  readonly suffix4: Int32Array;
  readonly suffix5: Int32Array;
  readonly prefix1: Int32Array;
  readonly prefix2: Int32Array;
  readonly prefix3: Int32Array;
  readonly shape: Int32Array;
}

/** Codes of each word; position `n` (one past the end) and `n+1` hold end markers, `-1`/`-2` are read as start markers by callers. */
export function wordCodes(words: readonly string[]): WordCodes {
  const n = words.length;
  const make = (): Int32Array => new Int32Array(n + 2).fill(hashString('<END>'));
  const codes = {
    form: make(),
    lower: make(),
    suffix1: make(),
    suffix2: make(),
    suffix3: make(),
    suffix4: make(),
    suffix5: make(),
    prefix1: make(),
    prefix2: make(),
    prefix3: make(),
    shape: make(),
  };
  for (let i = 0; i < n; i++) {
    const w = words[i]!;
    const l = w.toLowerCase();
    codes.form[i] = hashString(w);
    codes.lower[i] = hashString(l);
    codes.suffix1[i] = hashString(l.slice(-1));
    codes.suffix2[i] = hashString(l.slice(-2));
    codes.suffix3[i] = hashString(l.slice(-3));
    codes.suffix4[i] = hashString(l.slice(-4));
    codes.suffix5[i] = hashString(l.slice(-5));
    codes.prefix1[i] = hashString(w.slice(0, 1));
    codes.prefix2[i] = hashString(l.slice(0, 2));
    codes.prefix3[i] = hashString(l.slice(0, 3));
    codes.shape[i] = hashString(shape(w));
  }
  return codes;
}

/** Start-of-sentence code. */
export const START = hashString('<START>');
