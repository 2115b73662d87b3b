import { feature, hashString, random, shuffle } from './hashing.js';
import { START, wordCodes, type WordCodes } from './features.js';
import { Perceptron } from './perceptron.js';

/** Named-entity tags of the statistical tagger, IOB2. */
export const NER_TAGS = ['O', 'B-PER', 'I-PER', 'B-ORG', 'I-ORG', 'B-LOC', 'I-LOC'] as const;

/** A trained named-entity tagger: a perceptron over NER_TAGS and a gazetteer learned from training entities. */
export interface NerModel {
  readonly perceptron: Perceptron;
  /** Lower-cased token → hash of the entity types it occurs in (B/I position included). */
  readonly gazetteer: ReadonlyMap<string, number>;
}

/** A training sentence: tokens and IOB2 tags (types PER, ORG, LOC). */
export interface NerExample {
  readonly tokens: readonly string[];
  readonly tags: readonly string[];
}

const MAX_FEATURES = 40;
const NO_GAZ = hashString('<no-gaz>');
const TAG_INDEX = new Map<string, number>(NER_TAGS.map((t, i) => [t, i]));

/** True when tag `next` may follow `previous` in IOB2 (I-X only after B-X or I-X). */
function allowed(previous: number, next: number): boolean {
  const tag = NER_TAGS[next]!;
  if (!tag.startsWith('I-')) return true;
  const p = NER_TAGS[previous] ?? 'O';
  return p !== 'O' && p.slice(2) === tag.slice(2);
}

function gazCodes(tokens: readonly string[], gazetteer: ReadonlyMap<string, number>): Int32Array {
  const out = new Int32Array(tokens.length + 2).fill(NO_GAZ);
  tokens.forEach((t, i) => (out[i] = gazetteer.get(t.toLowerCase()) ?? NO_GAZ));
  return out;
}

/** The code at position j, or the start marker before the sentence. */
function before(a: Int32Array, j: number): number {
  return j < 0 ? START : a[j]!;
}

function extract(c: WordCodes, gaz: Int32Array, tokens: readonly string[], i: number, p1: number, p2: number, out: Int32Array): number {
  const t = tokens[i]!;
  const first = t[0] ?? '';
  const capital = first !== first.toLowerCase() ? 1 : 0;
  const w = c.lower[i]!;
  let n = 0;
  out[n++] = feature(1, 0);
  out[n++] = feature(2, w);
  out[n++] = feature(3, c.form[i]!);
  out[n++] = feature(4, c.shape[i]!);
  out[n++] = feature(5, c.suffix3[i]!);
  out[n++] = feature(6, c.prefix3[i]!);
  out[n++] = feature(7, c.suffix2[i]!);
  out[n++] = feature(8, before(c.lower, i - 1));
  out[n++] = feature(9, c.lower[i + 1]!);
  out[n++] = feature(10, before(c.lower, i - 2));
  out[n++] = feature(11, c.lower[i + 2]!);
  out[n++] = feature(12, before(c.shape, i - 1));
  out[n++] = feature(13, c.shape[i + 1]!);
  out[n++] = feature(14, p1);
  out[n++] = feature(15, p1, p2);
  out[n++] = feature(16, p1, w);
  out[n++] = feature(17, p1, c.shape[i]);
  out[n++] = feature(18, gaz[i]!);
  out[n++] = feature(19, i === 0 ? START : gaz[i - 1]!);
  out[n++] = feature(20, gaz[i + 1]!);
  out[n++] = feature(21, gaz[i]!, capital);
  out[n++] = feature(22, i === 0 ? 1 : 0, capital);
  out[n++] = feature(23, before(c.lower, i - 1), w);
  out[n++] = feature(24, w, c.lower[i + 1]);
  out[n++] = feature(25, before(c.shape, i - 1), c.shape[i], c.shape[i + 1]);
  out[n++] = feature(26, p1, before(c.lower, i - 1));
  out[n++] = feature(27, c.suffix4[i]!);
  out[n++] = feature(28, before(c.form, i - 1), capital);
  out[n++] = feature(29, c.form[i + 1]!, capital);
  return n;
}

/** Tags tokens with NER_TAGS indices, greedily left to right, never producing an invalid I- tag. */
export function tagEntities(model: NerModel, tokens: readonly string[]): string[] {
  const c = wordCodes(tokens);
  const gaz = gazCodes(tokens, model.gazetteer);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(NER_TAGS.length);
  const out: number[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const p1 = out[i - 1] ?? -1;
    const n = extract(c, gaz, tokens, i, p1, out[i - 2] ?? -1, feats);
    model.perceptron.score(feats, n, scores);
    out.push(Perceptron.best(scores, (k) => allowed(p1, k)));
  }
  return out.map((k) => NER_TAGS[k]!);
}

/** Builds the gazetteer: for each lower-cased token seen inside training entities, the set of its positions and types. */
export function buildGazetteer(examples: readonly NerExample[]): { gazetteer: Map<string, number>; text: Map<string, string> } {
  const seen = new Map<string, Set<string>>();
  for (const ex of examples) {
    ex.tags.forEach((tag, i) => {
      if (tag === 'O') return;
      const key = ex.tokens[i]!.toLowerCase();
      let set = seen.get(key);
      if (!set) seen.set(key, (set = new Set()));
      set.add(tag);
    });
  }
  const text = new Map<string, string>();
  for (const [key, set] of seen) text.set(key, [...set].sort().join(','));
  return { gazetteer: new Map([...text].map(([k, v]) => [k, hashString(v)])), text };
}

/** Trains the NER tagger. */
export function trainNer(
  examples: readonly NerExample[],
  options: { epochs: number; seed: number; bits: number; onEpoch?: (epoch: number, accuracy: number) => void },
): NerModel & { gazetteerText: Map<string, string> } {
  const { gazetteer, text } = buildGazetteer(examples);
  const perceptron = new Perceptron(NER_TAGS.length, options.bits);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(NER_TAGS.length);
  const next = random(options.seed);
  const order = [...examples];
  const prepared = new Map<NerExample, { c: WordCodes; gaz: Int32Array; gold: number[] }>();
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    shuffle(order, next);
    let right = 0;
    let total = 0;
    for (const ex of order) {
      let p = prepared.get(ex);
      if (!p) prepared.set(ex, (p = { c: wordCodes(ex.tokens), gaz: gazCodes(ex.tokens, gazetteer), gold: ex.tags.map((t) => TAG_INDEX.get(t) ?? 0) }));
      const history: number[] = [];
      for (let i = 0; i < ex.tokens.length; i++) {
        const p1 = history[i - 1] ?? -1;
        const n = extract(p.c, p.gaz, ex.tokens, i, p1, history[i - 2] ?? -1, feats);
        perceptron.score(feats, n, scores);
        const guess = Perceptron.best(scores, (k) => allowed(p1, k));
        perceptron.tick();
        perceptron.update(feats, n, p.gold[i]!, guess);
        history.push(guess);
        total++;
        if (guess === p.gold[i]) right++;
      }
    }
    options.onEpoch?.(epoch, right / total);
  }
  perceptron.average();
  return { perceptron, gazetteer, gazetteerText: text };
}
