/** 32-bit hashing for integer-coded features (MurmurHash3 mixing steps). */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** Mixes one 32-bit value into a running hash. */
export function mix(hash: number, value: number): number {
  let block = Math.imul(value, C1);
  block = (block << 15) | (block >>> 17);
  block = Math.imul(block, C2);
  let mixed = hash ^ block;
  mixed = (mixed << 13) | (mixed >>> 19);
  return (Math.imul(mixed, 5) + 0xe6546b64) | 0;
}

/** Final avalanche of a running hash. */
export function finish(hash: number): number {
  let mixed = hash ^ (hash >>> 16);
  mixed = Math.imul(mixed, 0x85ebca6b);
  mixed ^= mixed >>> 13;
  mixed = Math.imul(mixed, 0xc2b2ae35);
  // A signed result stays a small integer in V8 (no heap number per feature); callers mask it.
  return (mixed ^ (mixed >>> 16)) | 0;
}

/** Hash of a string (FNV-1a over UTF-16 code units, then avalanched). */
export function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  return finish(hash);
}

/** Feature hash of a template and one to four values. */
export function feature(template: number, first: number, second = 0, third = 0, fourth = 0): number {
  return finish(mix(mix(mix(mix(template, first), second), third), fourth));
}

/** A small deterministic PRNG (mulberry32) so training is reproducible for a seed. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

/** Shuffles in place with the given PRNG (Fisher–Yates). */
export function shuffle<T>(items: T[], next: () => number): T[] {
  for (let last = items.length - 1; last > 0; last--) {
    const other = Math.floor(next() * (last + 1));
    const tmp = itemAt(items, last, 'items');
    items[last] = itemAt(items, other, 'items');
    items[other] = tmp;
  }
  return items;
}
import { itemAt } from './checked.js';
