import { itemAt } from './checked.js';
import { hashString } from './hashing.js';

/** Word shape: X for upper case, x lower, d digit, other characters kept; runs capped at two. */
export function shape(word: string): string {
  let out = '';
  let last = '';
  let run = 0;
  for (const character of word.length > 24 ? word.slice(0, 24) : word) {
    const symbol =
      character >= 'A' && character <= 'Z'
        ? 'X'
        : character >= 'a' && character <= 'z'
          ? 'x'
          : character >= '0' && character <= '9'
            ? 'd'
            : character.toLowerCase() !== character
              ? 'X'
              : character.toUpperCase() !== character
                ? 'x'
                : character;
    if (symbol === last) {
      run++;
      if (run > 2) continue;
    } else {
      last = symbol;
      run = 1;
    }
    out += symbol;
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
  const count = words.length;
  const make = (): Int32Array => new Int32Array(count + 2).fill(hashString('<END>'));
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
  for (let index = 0; index < count; index++) {
    const word = itemAt(words, index, 'words');
    const lower = word.toLowerCase();
    codes.form[index] = hashString(word);
    codes.lower[index] = hashString(lower);
    codes.suffix1[index] = hashString(lower.slice(-1));
    codes.suffix2[index] = hashString(lower.slice(-2));
    codes.suffix3[index] = hashString(lower.slice(-3));
    codes.suffix4[index] = hashString(lower.slice(-4));
    codes.suffix5[index] = hashString(lower.slice(-5));
    codes.prefix1[index] = hashString(word.slice(0, 1));
    codes.prefix2[index] = hashString(lower.slice(0, 2));
    codes.prefix3[index] = hashString(lower.slice(0, 3));
    codes.shape[index] = hashString(shape(word));
  }
  return codes;
}

/** Start-of-sentence code. */
export const START = hashString('<START>');
