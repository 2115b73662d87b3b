import { itemAt } from './checked.js';
import { feature, hashString, random, shuffle } from './hashing.js';
import { START, wordCodes, type WordCodes } from './features.js';
import { Perceptron, type PerceptronTrainOptions } from './perceptron.js';

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
  /** Lower-cased token → hash of its classes in open name lists (`openNameLexicon`); empty in models trained without them. */
  readonly nameLists: ReadonlyMap<string, number>;
  /** Lower-cased token → hash of its class learned from unlabelled text (`trainingWordClasses`); absent or empty in models trained without them. */
  readonly wordClasses?: ReadonlyMap<string, number>;
}

/** A training sentence: tokens and IOB2 tags (types PER, ORG, LOC). */
export interface NerExample {
  readonly tokens: readonly string[];
  readonly tags: readonly string[];
  /** The tagger's joint UPOS+XPOS label of each token (predicted, as at annotation time). */
  readonly pos: readonly string[];
}

const MAX_FEATURES = 52;
const NO_POS = hashString('<no-pos>');
const NO_LEX = hashString('<no-lex>');
const NO_GAZ = hashString('<no-gaz>');
const NO_LIST = hashString('<no-list>');
const NO_CLASS = hashString('<no-class>');
const TAG_INDEX = new Map<string, number>(NER_TAGS.map((tag, index) => [tag, index]));

/** True when tag `next` may follow `previous` in IOB2 (I-X only after B-X or I-X). */
function allowed(previous: number, next: number): boolean {
  const tag = itemAt(NER_TAGS, next, 'NER_TAGS');
  if (!tag.startsWith('I-')) return true;
  const previousTag = NER_TAGS[previous] ?? 'O';
  return previousTag !== 'O' && previousTag.slice(2) === tag.slice(2);
}

/** Codes of each lower-cased token (`lower`) in a map (gazetteer, lexicon), `missing` where absent; two more past the end. */
function lookupCodes(lower: readonly string[], map: ReadonlyMap<string, number>, missing: number): Int32Array {
  const out = new Int32Array(lower.length + 2).fill(missing);
  lower.forEach((token, index) => (out[index] = map.get(token) ?? missing));
  return out;
}

/**
 * The tokens' codes in the gazetteer, the name lexicon, the open name lists and the word classes (none for a map that
 * is empty), each token lower-cased once.
 */
function nameCodes(
  tokens: readonly string[],
  gazetteer: ReadonlyMap<string, number>,
  lexicon: ReadonlyMap<string, number>,
  nameLists: ReadonlyMap<string, number>,
  wordClasses: ReadonlyMap<string, number> | undefined,
): Pick<Codes, 'gazetteerCodes' | 'lexiconCodes' | 'nameListCodes' | 'classCodes'> {
  const lower = tokens.map((token) => token.toLowerCase());
  return {
    gazetteerCodes: lookupCodes(lower, gazetteer, NO_GAZ),
    lexiconCodes: lookupCodes(lower, lexicon, NO_LEX),
    nameListCodes: nameLists.size > 0 ? lookupCodes(lower, nameLists, NO_LIST) : undefined,
    classCodes: wordClasses !== undefined && wordClasses.size > 0 ? lookupCodes(lower, wordClasses, NO_CLASS) : undefined,
  };
}

/** The code at `position`, or the start marker before the sentence. */
function before(codes: Int32Array, position: number): number {
  return position < 0 ? START : codes[position]!;
}

function posCodes(tokens: readonly string[], labels: readonly string[]): Int32Array {
  if (labels.length !== tokens.length) throw new RangeError(`${labels.length} part-of-speech labels for ${tokens.length} tokens`);
  const out = new Int32Array(tokens.length + 2).fill(NO_POS);
  labels.forEach((label, index) => (out[index] = hashString(label)));
  return out;
}

/** A sentence's precomputed codes. */
interface Codes {
  readonly words: WordCodes;
  readonly gazetteerCodes: Int32Array;
  readonly lexiconCodes: Int32Array;
  /** Codes in the open name lists; undefined when the model has none, so that it reads no such features. */
  readonly nameListCodes: Int32Array | undefined;
  /** Codes of the word classes; undefined when the model has none. */
  readonly classCodes: Int32Array | undefined;
  readonly pos: Int32Array;
}

/** Features of the token at `position` that do not read the previous tag. */
function extract(
  { words, gazetteerCodes, lexiconCodes, nameListCodes, classCodes, pos }: Codes,
  tokens: readonly string[],
  position: number,
  out: Int32Array,
): number {
  const token = itemAt(tokens, position, 'tokens');
  const first = token[0] ?? '';
  const capital = first !== first.toLowerCase() ? 1 : 0;
  const word = words.lower[position]!;
  let count = 0;
  out[count++] = feature(1, 0);
  out[count++] = feature(2, word);
  out[count++] = feature(3, words.form[position]!);
  out[count++] = feature(4, words.shape[position]!);
  out[count++] = feature(5, words.suffix3[position]!);
  out[count++] = feature(6, words.prefix3[position]!);
  out[count++] = feature(7, words.suffix2[position]!);
  out[count++] = feature(8, before(words.lower, position - 1));
  out[count++] = feature(9, words.lower[position + 1]!);
  out[count++] = feature(10, before(words.lower, position - 2));
  out[count++] = feature(11, words.lower[position + 2]!);
  out[count++] = feature(12, before(words.shape, position - 1));
  out[count++] = feature(13, words.shape[position + 1]!);
  out[count++] = feature(18, gazetteerCodes[position]!);
  out[count++] = feature(19, position === 0 ? START : gazetteerCodes[position - 1]!);
  out[count++] = feature(20, gazetteerCodes[position + 1]!);
  out[count++] = feature(21, gazetteerCodes[position]!, capital);
  out[count++] = feature(22, position === 0 ? 1 : 0, capital);
  out[count++] = feature(23, before(words.lower, position - 1), word);
  out[count++] = feature(24, word, words.lower[position + 1]);
  out[count++] = feature(25, before(words.shape, position - 1), words.shape[position], words.shape[position + 1]);
  out[count++] = feature(27, words.suffix4[position]!);
  out[count++] = feature(28, before(words.form, position - 1), capital);
  out[count++] = feature(29, words.form[position + 1]!, capital);
  out[count++] = feature(30, pos[position]!);
  out[count++] = feature(31, before(pos, position - 1));
  out[count++] = feature(32, pos[position + 1]!);
  out[count++] = feature(33, pos[position]!, capital);
  out[count++] = feature(34, pos[position]!, pos[position + 1]);
  out[count++] = feature(35, before(pos, position - 1), pos[position]);
  out[count++] = feature(37, pos[position]!, gazetteerCodes[position]);
  out[count++] = feature(38, lexiconCodes[position]!);
  out[count++] = feature(39, before(lexiconCodes, position - 1));
  out[count++] = feature(40, lexiconCodes[position + 1]!);
  out[count++] = feature(41, lexiconCodes[position]!, capital);
  out[count++] = feature(42, pos[position]!, lexiconCodes[position]);
  out[count++] = feature(43, lexiconCodes[position]!, lexiconCodes[position + 1]);
  if (nameListCodes) {
    out[count++] = feature(44, nameListCodes[position]!);
    out[count++] = feature(45, before(nameListCodes, position - 1));
    out[count++] = feature(46, nameListCodes[position + 1]!);
    out[count++] = feature(47, nameListCodes[position]!, capital);
    out[count++] = feature(48, pos[position]!, nameListCodes[position]);
    out[count++] = feature(49, nameListCodes[position]!, nameListCodes[position + 1]);
  }
  if (classCodes) {
    out[count++] = feature(50, classCodes[position]!);
    out[count++] = feature(51, before(classCodes, position - 1));
    out[count++] = feature(52, classCodes[position + 1]!);
    out[count++] = feature(53, classCodes[position]!, capital, position === 0 ? 1 : 0);
  }
  return count;
}

/** Number of features `extractPrevious` writes. */
const PREVIOUS_FEATURES = 5;

/** Features of the token at `position` that read the previous tag `previousTag` (-1 before the sentence), written from `out[at]`. */
function extractPrevious({ words, pos }: Codes, position: number, previousTag: number, out: Int32Array, at: number): void {
  out[at] = feature(14, previousTag);
  out[at + 1] = feature(16, previousTag, words.lower[position]);
  out[at + 2] = feature(17, previousTag, words.shape[position]);
  out[at + 3] = feature(26, previousTag, before(words.lower, position - 1));
  out[at + 4] = feature(36, pos[position]!, previousTag);
}

const TAG_COUNT = NER_TAGS.length;
/** ALLOWED[(previous + 1) * TAG_COUNT + next]: IOB2 validity, previous -1 for the sentence start. */
const ALLOWED = Uint8Array.from({ length: (TAG_COUNT + 1) * TAG_COUNT }, (_, cell) => (allowed(Math.floor(cell / TAG_COUNT) - 1, cell % TAG_COUNT) ? 1 : 0));

/**
 * The best valid IOB2 tag sequence (tag indices) under a first-order model: Viterbi over each token's
 * own features plus the features that read the previous tag.
 */
function viterbi(perceptron: Perceptron, codes: Codes, tokens: readonly string[]): number[] {
  const length = tokens.length;
  if (length === 0) return [];
  const feats = new Int32Array(MAX_FEATURES);
  const own = new Float32Array(TAG_COUNT);
  const previous = new Float32Array(TAG_COUNT);
  const delta = new Float64Array(length * TAG_COUNT);
  const back = new Int8Array(length * TAG_COUNT);
  for (let position = 0; position < length; position++) {
    const count = extract(codes, tokens, position, feats);
    perceptron.score(feats, count, own);
    const states = position === 0 ? 1 : TAG_COUNT;
    for (let tag = 0; tag < TAG_COUNT; tag++) delta[position * TAG_COUNT + tag] = -Infinity;
    for (let from = 0; from < states; from++) {
      const previousTag = position === 0 ? -1 : from;
      const base = position === 0 ? 0 : delta[(position - 1) * TAG_COUNT + from]!;
      if (base === -Infinity) continue;
      extractPrevious(codes, position, previousTag, feats, 0);
      perceptron.score(feats, PREVIOUS_FEATURES, previous);
      for (let tag = 0; tag < TAG_COUNT; tag++) {
        if (!ALLOWED[(previousTag + 1) * TAG_COUNT + tag]) continue;
        const score = base + own[tag]! + previous[tag]!;
        if (score > delta[position * TAG_COUNT + tag]!) {
          delta[position * TAG_COUNT + tag] = score;
          back[position * TAG_COUNT + tag] = previousTag;
        }
      }
    }
  }
  let best = 0;
  for (let tag = 1; tag < TAG_COUNT; tag++) if (delta[(length - 1) * TAG_COUNT + tag]! > delta[(length - 1) * TAG_COUNT + best]!) best = tag;
  const out = new Array<number>(length);
  for (let position = length - 1; position >= 0; position--) {
    out[position] = best;
    best = back[position * TAG_COUNT + best]!;
  }
  return out;
}

/**
 * Tags tokens with NER_TAGS: the best valid IOB2 sequence (Viterbi); `partsOfSpeech` are the
 * tokens' joint tagger labels (`NlpPipeline.tag`); `words` are the tokens' codes when the caller has them (`wordCodes`).
 */
export function tagEntities(model: NerModel, tokens: readonly string[], partsOfSpeech: readonly string[], words: WordCodes = wordCodes(tokens)): string[] {
  const codes: Codes = {
    words,
    ...nameCodes(tokens, model.gazetteer, model.lexicon, model.nameLists, model.wordClasses),
    pos: posCodes(tokens, partsOfSpeech),
  };
  const out = viterbi(model.perceptron, codes, tokens);
  return out.map((tagIndex) => itemAt(NER_TAGS, tagIndex, 'NER_TAGS'));
}

/** Builds the gazetteer: for each lower-cased token seen inside training entities, the set of its positions and types. */
export function buildGazetteer(examples: readonly { readonly tokens: readonly string[]; readonly tags: readonly string[] }[]): {
  gazetteer: Map<string, number>;
  text: Map<string, string>;
} {
  const seen = new Map<string, Set<string>>();
  for (const example of examples) {
    example.tags.forEach((tag, position) => {
      if (tag === 'O') return;
      const key = itemAt(example.tokens, position, 'example.tokens').toLowerCase();
      let set = seen.get(key);
      if (!set) seen.set(key, (set = new Set()));
      set.add(tag);
    });
  }
  const text = new Map<string, string>();
  for (const [key, set] of seen) text.set(key, [...set].sort().join(','));
  return { gazetteer: new Map([...text].map(([fold, score]) => [fold, hashString(score)])), text };
}

/** How `trainNer` trains. */
export interface NerTrainOptions extends PerceptronTrainOptions {
  /** Folds of the gazetteer a training sentence reads (built without its own fold); 1: the whole gazetteer. */
  readonly gazetteerFolds: number;
  /** Lower-cased word → its classes, comma-joined (`compromiseNameLexicon`); empty for none. */
  readonly lexicon: ReadonlyMap<string, string>;
  /** Lower-cased word → its classes in open name lists, comma-joined (`openNameLexicon`); empty for none. */
  readonly nameLists: ReadonlyMap<string, string>;
  /** Lower-cased word → its class learned from unlabelled text (`trainingWordClasses`); none when absent or empty. */
  readonly wordClasses?: ReadonlyMap<string, string>;
  readonly onEpoch?: (epoch: number, accuracy: number) => void;
}

/** Trains the NER tagger. */
export function trainNer(
  examples: readonly NerExample[],
  options: NerTrainOptions,
): NerModel & {
  gazetteerText: Map<string, string>;
  lexiconText: ReadonlyMap<string, string>;
  nameListsText: ReadonlyMap<string, string>;
  wordClassesText: ReadonlyMap<string, string>;
} {
  const { gazetteer, text } = buildGazetteer(examples);
  const lexiconText = options.lexicon;
  const lexicon = new Map([...lexiconText].map(([fold, score]) => [fold, hashString(score)]));
  const nameListsText = options.nameLists;
  const nameLists = new Map([...nameListsText].map(([fold, score]) => [fold, hashString(score)]));
  const wordClassesText = options.wordClasses ?? new Map<string, string>();
  const wordClasses = new Map([...wordClassesText].map(([fold, wordClass]) => [fold, hashString(wordClass)]));
  // A training sentence reads the gazetteer built without its own fold: with the full one, every training entity would
  // find itself there and the tagger would learn to trust the gazetteer where, on new text, names are mostly unseen.
  const folds = options.gazetteerFolds;
  const foldOf = (example: NerExample): number => (folds <= 1 ? 0 : Math.abs(hashString(example.tokens.join(' '))) % folds);
  const foldGazetteers =
    folds <= 1 ? [gazetteer] : Array.from({ length: folds }, (_, fold) => buildGazetteer(examples.filter((example) => foldOf(example) !== fold)).gazetteer);
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
    for (const example of order) {
      let sentenceCodes = prepared.get(example);
      if (!sentenceCodes)
        prepared.set(
          example,
          (sentenceCodes = {
            words: wordCodes(example.tokens),
            ...nameCodes(example.tokens, itemAt(foldGazetteers, foldOf(example), 'foldGazetteers'), lexicon, nameLists, wordClasses),
            pos: posCodes(example.tokens, example.pos),
            gold: example.tags.map((tag) => TAG_INDEX.get(tag) ?? 0),
          }),
        );
      // structured perceptron: decode the sentence, then move towards the gold sequence's features where they differ
      const guess = viterbi(perceptron, sentenceCodes, example.tokens);
      perceptron.tick();
      for (let position = 0; position < example.tokens.length; position++) {
        total++;
        const gold = itemAt(sentenceCodes.gold, position, 'sentenceCodes.gold');
        if (guess[position] === gold) right++;
        const goldPrevious = position === 0 ? -1 : itemAt(sentenceCodes.gold, position - 1, 'sentenceCodes.gold');
        const guessPrevious = position === 0 ? -1 : itemAt(guess, position - 1, 'guess');
        if (guess[position] === gold && guessPrevious === goldPrevious) continue;
        const count = extract(sentenceCodes, example.tokens, position, feats);
        if (guess[position] !== gold) {
          perceptron.adjust(feats, count, gold, 1);
          perceptron.adjust(feats, count, itemAt(guess, position, 'guess'), -1);
        }
        extractPrevious(sentenceCodes, position, goldPrevious, previousFeats, 0);
        perceptron.adjust(previousFeats, PREVIOUS_FEATURES, gold, 1);
        extractPrevious(sentenceCodes, position, guessPrevious, previousFeats, 0);
        perceptron.adjust(previousFeats, PREVIOUS_FEATURES, itemAt(guess, position, 'guess'), -1);
      }
    }
    options.onEpoch?.(epoch, right / total);
  }
  perceptron.average();
  return { perceptron, gazetteer, gazetteerText: text, lexicon, lexiconText, nameLists, nameListsText, wordClasses, wordClassesText };
}
