/** 32-bit hashing for integer-coded features (MurmurHash3 mixing steps). */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** Mixes one 32-bit value into a running hash. */
export function mix(h: number, v: number): number {
  let k = Math.imul(v, C1);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, C2);
  let x = h ^ k;
  x = (x << 13) | (x >>> 19);
  return (Math.imul(x, 5) + 0xe6546b64) | 0;
}

/** Final avalanche of a running hash. */
export function finish(h: number): number {
  let x = h ^ (h >>> 16);
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  // A signed result stays a small integer in V8 (no heap number per feature); callers mask it.
  return (x ^ (x >>> 16)) | 0;
}

/** Hash of a string (FNV-1a over UTF-16 code units, then avalanched). */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return finish(h);
}

/** Feature hash of a template and one to four values. */
export function feature(template: number, a: number, b = 0, c = 0, d = 0): number {
  return finish(mix(mix(mix(mix(template, a), b), c), d));
}

/** A small deterministic PRNG (mulberry32) so training is reproducible for a seed. */
export function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Shuffles in place with the given PRNG (Fisher–Yates). */
export function shuffle<T>(items: T[], next: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    const tmp = items[i]!;
    items[i] = items[j]!;
    items[j] = tmp;
  }
  return items;
}
