import { feature, hashString, random, shuffle } from './hashing.js';
import { START, wordCodes, type WordCodes } from './features.js';
import { Perceptron } from './perceptron.js';

/** Named-entity tags of the statistical tagger, IOB2. */
export const NER_TAGS = ['O', 'B-PER', 'I-PER', 'B-ORG', 'I-ORG', 'B-LOC', 'I-LOC'] as const;

/**
 * A trained named-entity tagger: a perceptron over NER_TAGS reading the words, their parts of speech (the tagger's
 * joint labels), a gazetteer learned from training entities and a name lexicon.
 */
export interface NerModel {
  readonly perceptron: Perceptron;
  /** Lower-cased token → hash of the entity types it occurs in (B/I position included). */
  readonly gazetteer: ReadonlyMap<string, number>;
  /** Lower-cased token → hash of its classes in a name lexicon (first names, places, organisations…; `compromiseNameLexicon`). */
  readonly lexicon: ReadonlyMap<string, number>;
}

/** A training sentence: tokens and IOB2 tags (types PER, ORG, LOC). */
export interface NerExample {
  readonly tokens: readonly string[];
  readonly tags: readonly string[];
  /** The tagger's joint UPOS+XPOS label of each token (predicted, as at annotation time). */
  readonly pos: readonly string[];
}

const MAX_FEATURES = 48;
const NO_POS = hashString('<no-pos>');
const NO_LEX = hashString('<no-lex>');
const NO_GAZ = hashString('<no-gaz>');
const TAG_INDEX = new Map<string, number>(NER_TAGS.map((t, i) => [t, i]));

/** True when tag `next` may follow `previous` in IOB2 (I-X only after B-X or I-X). */
function allowed(previous: number, next: number): boolean {
  const tag = NER_TAGS[next]!;
  if (!tag.startsWith('I-')) return true;
  const p = NER_TAGS[previous] ?? 'O';
  return p !== 'O' && p.slice(2) === tag.slice(2);
}

/** Codes of each lower-cased token in a map (gazetteer, lexicon), `missing` where absent; two more past the end. */
function lookupCodes(tokens: readonly string[], map: ReadonlyMap<string, number>, missing: number): Int32Array {
  const out = new Int32Array(tokens.length + 2).fill(missing);
  tokens.forEach((t, i) => (out[i] = map.get(t.toLowerCase()) ?? missing));
  return out;
}

/** The code at position j, or the start marker before the sentence. */
function before(a: Int32Array, j: number): number {
  return j < 0 ? START : a[j]!;
}

function posCodes(tokens: readonly string[], labels: readonly string[]): Int32Array {
  if (labels.length !== tokens.length) throw new RangeError(`${labels.length} part-of-speech labels for ${tokens.length} tokens`);
  const out = new Int32Array(tokens.length + 2).fill(NO_POS);
  labels.forEach((t, i) => (out[i] = hashString(t)));
  return out;
}

/** A sentence's precomputed codes. */
interface Codes {
  readonly c: WordCodes;
  readonly gaz: Int32Array;
  readonly lex: Int32Array;
  readonly pos: Int32Array;
}

/** Features of token i that do not read the previous tag. */
function extract({ c, gaz, lex, pos }: Codes, tokens: readonly string[], i: number, out: Int32Array): number {
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
  out[n++] = feature(18, gaz[i]!);
  out[n++] = feature(19, i === 0 ? START : gaz[i - 1]!);
  out[n++] = feature(20, gaz[i + 1]!);
  out[n++] = feature(21, gaz[i]!, capital);
  out[n++] = feature(22, i === 0 ? 1 : 0, capital);
  out[n++] = feature(23, before(c.lower, i - 1), w);
  out[n++] = feature(24, w, c.lower[i + 1]);
  out[n++] = feature(25, before(c.shape, i - 1), c.shape[i], c.shape[i + 1]);
  out[n++] = feature(27, c.suffix4[i]!);
  out[n++] = feature(28, before(c.form, i - 1), capital);
  out[n++] = feature(29, c.form[i + 1]!, capital);
  out[n++] = feature(30, pos[i]!);
  out[n++] = feature(31, before(pos, i - 1));
  out[n++] = feature(32, pos[i + 1]!);
  out[n++] = feature(33, pos[i]!, capital);
  out[n++] = feature(34, pos[i]!, pos[i + 1]);
  out[n++] = feature(35, before(pos, i - 1), pos[i]);
  out[n++] = feature(37, pos[i]!, gaz[i]);
  out[n++] = feature(38, lex[i]!);
  out[n++] = feature(39, before(lex, i - 1));
  out[n++] = feature(40, lex[i + 1]!);
  out[n++] = feature(41, lex[i]!, capital);
  out[n++] = feature(42, pos[i]!, lex[i]);
  out[n++] = feature(43, lex[i]!, lex[i + 1]);
  return n;
}

/** Number of features `extractPrevious` writes. */
const PREVIOUS_FEATURES = 5;

/** Features of token i that read the previous tag `p1` (-1 before the sentence), written from `out[at]`. */
function extractPrevious({ c, pos }: Codes, i: number, p1: number, out: Int32Array, at: number): void {
  out[at] = feature(14, p1);
  out[at + 1] = feature(16, p1, c.lower[i]);
  out[at + 2] = feature(17, p1, c.shape[i]);
  out[at + 3] = feature(26, p1, before(c.lower, i - 1));
  out[at + 4] = feature(36, pos[i]!, p1);
}

const T = NER_TAGS.length;
/** ALLOWED[(previous + 1) * T + next]: IOB2 validity, previous -1 for the sentence start. */
const ALLOWED = Uint8Array.from({ length: (T + 1) * T }, (_, k) => (allowed(Math.floor(k / T) - 1, k % T) ? 1 : 0));

/**
 * The best valid IOB2 tag sequence (tag indices) under a first-order model: Viterbi over each token's
 * own features plus the features that read the previous tag.
 */
function viterbi(perceptron: Perceptron, codes: Codes, tokens: readonly string[]): number[] {
  const n = tokens.length;
  if (n === 0) return [];
  const feats = new Int32Array(MAX_FEATURES);
  const own = new Float32Array(T);
  const previous = new Float32Array(T);
  const delta = new Float64Array(n * T);
  const back = new Int8Array(n * T);
  for (let i = 0; i < n; i++) {
    const count = extract(codes, tokens, i, feats);
    perceptron.score(feats, count, own);
    const states = i === 0 ? 1 : T;
    for (let c = 0; c < T; c++) delta[i * T + c] = -Infinity;
    for (let s = 0; s < states; s++) {
      const p1 = i === 0 ? -1 : s;
      const base = i === 0 ? 0 : delta[(i - 1) * T + s]!;
      if (base === -Infinity) continue;
      extractPrevious(codes, i, p1, feats, 0);
      perceptron.score(feats, PREVIOUS_FEATURES, previous);
      for (let c = 0; c < T; c++) {
        if (!ALLOWED[(p1 + 1) * T + c]) continue;
        const v = base + own[c]! + previous[c]!;
        if (v > delta[i * T + c]!) {
          delta[i * T + c] = v;
          back[i * T + c] = p1;
        }
      }
    }
  }
  let best = 0;
  for (let c = 1; c < T; c++) if (delta[(n - 1) * T + c]! > delta[(n - 1) * T + best]!) best = c;
  const out = new Array<number>(n);
  for (let i = n - 1; i >= 0; i--) {
    out[i] = best;
    best = back[i * T + best]!;
  }
  return out;
}

/**
 * Tags tokens with NER_TAGS: the best valid IOB2 sequence (Viterbi); `partsOfSpeech` are the
 * tokens' joint tagger labels (`NlpPipeline.tag`).
 */
export function tagEntities(model: NerModel, tokens: readonly string[], partsOfSpeech: readonly string[]): string[] {
  const codes: Codes = {
    c: wordCodes(tokens),
    gaz: lookupCodes(tokens, model.gazetteer, NO_GAZ),
    lex: lookupCodes(tokens, model.lexicon, NO_LEX),
    pos: posCodes(tokens, partsOfSpeech),
  };
  const out = viterbi(model.perceptron, codes, tokens);
  return out.map((k) => NER_TAGS[k]!);
}

/** Builds the gazetteer: for each lower-cased token seen inside training entities, the set of its positions and types. */
export function buildGazetteer(examples: readonly { readonly tokens: readonly string[]; readonly tags: readonly string[] }[]): {
  gazetteer: Map<string, number>;
  text: Map<string, string>;
} {
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

/** How `trainNer` trains. */
export interface NerTrainOptions {
  readonly epochs: number;
  readonly seed: number;
  readonly bits: number;
  /** Folds of the gazetteer a training sentence reads (built without its own fold); 1: the whole gazetteer. */
  readonly gazetteerFolds: number;
  /** Lower-cased word → its classes, comma-joined (`compromiseNameLexicon`); empty for none. */
  readonly lexicon: ReadonlyMap<string, string>;
  readonly onEpoch?: (epoch: number, accuracy: number) => void;
}

/** Trains the NER tagger. */
export function trainNer(
  examples: readonly NerExample[],
  options: NerTrainOptions,
): NerModel & { gazetteerText: Map<string, string>; lexiconText: ReadonlyMap<string, string> } {
  const { gazetteer, text } = buildGazetteer(examples);
  const lexiconText = options.lexicon;
  const lexicon = new Map([...lexiconText].map(([k, v]) => [k, hashString(v)]));
  // A training sentence reads the gazetteer built without its own fold: with the full one, every training entity would
  // find itself there and the tagger would learn to trust the gazetteer where, on new text, names are mostly unseen.
  const folds = options.gazetteerFolds;
  const foldOf = (ex: NerExample): number => (folds <= 1 ? 0 : Math.abs(hashString(ex.tokens.join(' '))) % folds);
  const foldGazetteers =
    folds <= 1 ? [gazetteer] : Array.from({ length: folds }, (_, k) => buildGazetteer(examples.filter((ex) => foldOf(ex) !== k)).gazetteer);
  const perceptron = new Perceptron(NER_TAGS.length, options.bits);
  const feats = new Int32Array(MAX_FEATURES);
  const previousFeats = new Int32Array(PREVIOUS_FEATURES);
  const next = random(options.seed);
  const order = [...examples];
  const prepared = new Map<NerExample, Codes & { gold: number[] }>();
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    shuffle(order, next);
    let right = 0;
    let total = 0;
    for (const ex of order) {
      let p = prepared.get(ex);
      if (!p)
        prepared.set(
          ex,
          (p = {
            c: wordCodes(ex.tokens),
            gaz: lookupCodes(ex.tokens, foldGazetteers[foldOf(ex)]!, NO_GAZ),
            lex: lookupCodes(ex.tokens, lexicon, NO_LEX),
            pos: posCodes(ex.tokens, ex.pos),
            gold: ex.tags.map((t) => TAG_INDEX.get(t) ?? 0),
          }),
        );
      // structured perceptron: decode the sentence, then move towards the gold sequence's features where they differ
      const guess = viterbi(perceptron, p, ex.tokens);
      perceptron.tick();
      for (let i = 0; i < ex.tokens.length; i++) {
        total++;
        const gold = p.gold[i]!;
        if (guess[i] === gold) right++;
        const goldPrevious = i === 0 ? -1 : p.gold[i - 1]!;
        const guessPrevious = i === 0 ? -1 : guess[i - 1]!;
        if (guess[i] === gold && guessPrevious === goldPrevious) continue;
        const count = extract(p, ex.tokens, i, feats);
        if (guess[i] !== gold) {
          perceptron.adjust(feats, count, gold, 1);
          perceptron.adjust(feats, count, guess[i]!, -1);
        }
        extractPrevious(p, i, goldPrevious, previousFeats, 0);
        perceptron.adjust(previousFeats, PREVIOUS_FEATURES, gold, 1);
        extractPrevious(p, i, guessPrevious, previousFeats, 0);
        perceptron.adjust(previousFeats, PREVIOUS_FEATURES, guess[i]!, -1);
      }
    }
    options.onEpoch?.(epoch, right / total);
  }
  perceptron.average();
  return { perceptron, gazetteer, gazetteerText: text, lexicon, lexiconText };
}
