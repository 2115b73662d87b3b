import { LoomError } from '@loom/domain';

/** An index outside a list that libs/nlp sized itself: a bug here, never bad input. */
export class IndexOutOfRangeError extends LoomError {
  readonly kind = 'failed-precondition';

  constructor(
    readonly list: string,
    readonly index: number,
    readonly length: number,
  ) {
    super(`${list}: index ${index} is outside 0..${length - 1}`);
  }
}

/** The item at `index` of `list`, or an IndexOutOfRangeError naming the list (`what`). */
export function itemAt<T>(list: ArrayLike<T>, index: number, what: string): T {
  const item = list[index];
  if (item === undefined) throw new IndexOutOfRangeError(what, index, list.length);
  return item;
}

/** A key missing from a map that libs/nlp filled itself: a bug here, never bad input. */
export class MissingEntryError extends LoomError {
  readonly kind = 'failed-precondition';

  constructor(
    readonly map: string,
    readonly key: string,
  ) {
    super(`${map}: no entry for ${key}`);
  }
}

/** The value of `key` in `map`, or a MissingEntryError naming the map (`what`). */
export function entryOf<K, V>(map: ReadonlyMap<K, V>, key: K, what: string): V {
  const value = map.get(key);
  if (value === undefined) throw new MissingEntryError(what, String(key));
  return value;
}
