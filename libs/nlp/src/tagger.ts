import { itemAt } from './checked.js';
import { feature, random, shuffle } from './hashing.js';
import { hashString } from './hashing.js';
import { START, wordCodes, type WordCodes } from './features.js';
import { Perceptron, type PerceptronTrainOptions } from './perceptron.js';
import {
  ClauseRole,
  clauseRoles,
  firstPassVerbless,
  NO_VERB_SEEN,
  nextVerbSeen,
  verbCues,
  VERBAL_MIN_COUNT,
  VERBAL_MIN_SHARE,
  VerblessRepair,
  wordClauseRoles,
} from './tagger-clauses.js';

/**
 * A trained part-of-speech tagger: joint UPOS+XPOS labels, an ambiguity-class lexicon and frequent
 * unambiguous words. Two greedy left-to-right passes: the second also sees the first pass's tags
 * of the next two words, which a single left-to-right pass cannot.
 */
export interface TaggerModel {
  /** First pass (left context only). */
  readonly perceptron: Perceptron;
  /** Second pass (also the first pass's tags to the right). */
  readonly second: Perceptron;
  /** The second pass runs only where the first pass's best score leads the next by less than this. */
  readonly secondPassMargin: number;
  /** Joint labels `UPOS\tXPOS`. */
  readonly labels: readonly string[];
  /** Lower-cased word → hash of the set of labels it takes (its ambiguity class). */
  readonly ambiguity: ReadonlyMap<string, number>;
  /** Word form → the label it always takes (frequent and unambiguous in training). */
  readonly unambiguous: ReadonlyMap<string, number>;
  /** The features the model was trained on: 1 without the verb-seen features, 2 without the verb cues, TAGGER_FEATURES_VERSION with both. */
  readonly featuresVersion: number;
  /** Lower-cased word → what its ambiguity class says of its clause role (see wordClauseRoles): a sure verb, boundary or conjunction, or a possible verb. */
  readonly wordRoles: ReadonlyMap<string, number>;
}

/** A training sentence: word forms and their joint label indices. */
export interface TaggedSentence {
  readonly words: readonly string[];
  readonly labels: readonly number[];
}

/** How `trainTagger` trains. */
export interface TaggerTrainOptions extends PerceptronTrainOptions {
  /** See TaggerModel.secondPassMargin. */
  readonly secondPassMargin: number;
  /** Called after each epoch (for progress logs). */
  readonly onEpoch?: (epoch: number, trainAccuracy: number) => void;
}

const MAX_FEATURES = 64;

/**
 * The version of the features the tagger trains on, kept in its model file; a model of version 1 (before the
 * verb-seen features 44 and 46) or 2 (before the verb cues 47 to 49, the second pass's 67 and 68 and the verbless
 * repair) is still read and tagged with the features it was trained on.
 */
export const TAGGER_FEATURES_VERSION = 3;
/**
 * A word's ambiguity class holds the labels of at least this share of its occurrences… With GUM in training (see
 * TAGGER_SETTINGS.gum) 0.03 kept "lives" (42 NNS, 2 VBZ, 1 NNPS) a possible verb, which 0.05 did not (docs/decisions.md).
 */
const AMBIGUITY_MIN_SHARE = 0.05;
/** …and a word seen fewer times than this has none. */
const AMBIGUITY_MIN_COUNT = 2;
/** A form is unambiguous when seen at least this often… */
const UNAMBIGUOUS_MIN_COUNT = 20;
/** …with one label at least this share of the time. */
const UNAMBIGUOUS_MIN_SHARE = 0.995;

/** The ambiguity class codes of a sentence's lower-cased words, with two end markers after them. */
function ambiguityCodes(lower: readonly string[], ambiguity: ReadonlyMap<string, number>): Int32Array {
  const codes = new Int32Array(lower.length + 2).fill(hashString('<END>'));
  for (let index = 0; index < lower.length; index++) codes[index] = ambiguity.get(itemAt(lower, index, 'lower')) ?? UNKNOWN_CLASS;
  return codes;
}

const UNKNOWN_CLASS = hashString('<UNK-CLASS>');

/** The code at `position`, or the start marker before the sentence. */
function before(codes: Int32Array, position: number): number {
  return position < 0 ? START : codes[position]!;
}

/**
 * Features of the word at `position`. `verbSeen` (1 when a verb or auxiliary was tagged since the clause began) tells a
 * subject's noun from its verb: "Grace Hopper lives in Boston" has no verb before "lives", "their lives in Boston" has one.
 */
function extract(
  codes: WordCodes,
  classCodes: Int32Array,
  position: number,
  previousTag: number,
  secondPreviousTag: number,
  verbSeen: number,
  cues: Int8Array,
  out: Int32Array,
): number {
  let count = 0;
  const word = codes.lower[position]!;
  out[count++] = feature(1, 0);
  out[count++] = feature(2, word);
  out[count++] = feature(3, codes.form[position]!);
  out[count++] = feature(4, codes.suffix1[position]!);
  out[count++] = feature(5, codes.suffix2[position]!);
  out[count++] = feature(6, codes.suffix3[position]!);
  out[count++] = feature(7, codes.suffix4[position]!);
  out[count++] = feature(8, codes.prefix1[position]!);
  out[count++] = feature(9, codes.prefix2[position]!);
  out[count++] = feature(10, codes.prefix3[position]!);
  out[count++] = feature(11, codes.shape[position]!);
  out[count++] = feature(12, previousTag);
  out[count++] = feature(13, secondPreviousTag);
  out[count++] = feature(14, previousTag, secondPreviousTag);
  out[count++] = feature(15, previousTag, word);
  out[count++] = feature(16, before(codes.lower, position - 1));
  out[count++] = feature(17, before(codes.suffix3, position - 1));
  out[count++] = feature(18, before(codes.lower, position - 2));
  out[count++] = feature(19, codes.lower[position + 1]!);
  out[count++] = feature(20, codes.suffix3[position + 1]!);
  out[count++] = feature(21, codes.lower[position + 2]!);
  out[count++] = feature(22, classCodes[position]!);
  out[count++] = feature(23, classCodes[position + 1]!);
  out[count++] = feature(24, classCodes[position + 2]!);
  out[count++] = feature(25, word, codes.lower[position + 1]);
  out[count++] = feature(26, before(codes.lower, position - 1), word);
  out[count++] = feature(27, previousTag, classCodes[position]);
  out[count++] = feature(28, classCodes[position]!, classCodes[position + 1]);
  out[count++] = feature(29, codes.shape[position + 1]!);
  out[count++] = feature(30, previousTag, codes.suffix3[position]);
  out[count++] = feature(31, before(codes.shape, position - 1), codes.shape[position]);
  out[count++] = feature(32, previousTag, classCodes[position + 1]);
  out[count++] = feature(33, codes.suffix2[position]!, codes.shape[position]);
  out[count++] = feature(34, previousTag, codes.lower[position + 1]);
  out[count++] = feature(35, before(codes.lower, position - 1), codes.lower[position + 1]);
  out[count++] = feature(36, codes.suffix4[position + 1]!);
  out[count++] = feature(37, codes.prefix3[position + 1]!);
  out[count++] = feature(38, before(codes.shape, position - 1), position === 0 ? 1 : 0, codes.shape[position]);
  out[count++] = feature(39, codes.suffix5[position]!);
  out[count++] = feature(40, word, classCodes[position + 1]);
  out[count++] = feature(41, previousTag, secondPreviousTag, word);
  out[count++] = feature(42, codes.lower[position + 1]!, codes.lower[position + 2]);
  out[count++] = feature(43, before(codes.suffix2, position - 1), codes.suffix2[position]);
  if (verbSeen !== NO_VERB_SEEN) {
    out[count++] = feature(44, verbSeen, previousTag, codes.suffix2[position]);
    out[count++] = feature(46, verbSeen, previousTag, classCodes[position]);
  }
  const cue = cues[position]!;
  if (cue !== NO_VERB_SEEN) {
    out[count++] = feature(47, verbSeen, cue, previousTag, classCodes[position]);
    out[count++] = feature(48, verbSeen, cue, classCodes[position]);
    out[count++] = feature(49, verbSeen, cue, previousTag);
  }
  return count;
}

/** Features of the second pass: those of the first plus the first pass's tags at i+1 and i+2 (and whether it tagged a verb at all). */
function extractSecond(
  codes: WordCodes,
  classCodes: Int32Array,
  first: readonly number[],
  verbless: number,
  position: number,
  previousTag: number,
  secondPreviousTag: number,
  verbSeen: number,
  cues: Int8Array,
  out: Int32Array,
): number {
  let count = extract(codes, classCodes, position, previousTag, secondPreviousTag, verbSeen, cues, out);
  const nextTag = first[position + 1] ?? NO_TAG;
  const secondNextTag = first[position + 2] ?? NO_TAG;
  out[count++] = feature(60, nextTag);
  out[count++] = feature(61, nextTag, secondNextTag);
  out[count++] = feature(62, previousTag, nextTag);
  out[count++] = feature(63, codes.lower[position]!, nextTag);
  out[count++] = feature(64, codes.suffix3[position]!, nextTag);
  out[count++] = feature(65, classCodes[position]!, nextTag);
  out[count++] = feature(66, previousTag, nextTag, classCodes[position]);
  if (verbless !== NO_VERB_SEEN) {
    out[count++] = feature(67, verbless, classCodes[position]);
    out[count++] = feature(68, verbless, previousTag, classCodes[position]);
  }
  return count;
}

const NO_TAG = -1;

/** The first pass over one sentence (word codes prepared by the caller); `margins[i]` gets how far the best tag leads the next (Infinity for lexicon words). */
function firstPass(
  perceptron: Perceptron,
  roles: Int8Array,
  featuresVersion: number,
  unambiguous: ReadonlyMap<string, number>,
  words: readonly string[],
  codes: WordCodes,
  classCodes: Int32Array,
  cues: Int8Array,
  margins?: Float32Array,
): number[] {
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(perceptron.classes);
  const out: number[] = [];
  let verbSeen = featuresVersion >= 2 ? 0 : NO_VERB_SEEN;
  for (let position = 0; position < words.length; position++) {
    const known = unambiguous.get(itemAt(words, position, 'words'));
    if (known !== undefined) {
      out.push(known);
      verbSeen = nextVerbSeen(roles, verbSeen, known, featuresVersion);
      if (margins) margins[position] = Infinity;
      continue;
    }
    const count = extract(codes, classCodes, position, out[position - 1] ?? NO_TAG, out[position - 2] ?? NO_TAG, verbSeen, cues, feats);
    perceptron.score(feats, count, scores);
    const best = Perceptron.best(scores);
    out.push(best);
    verbSeen = nextVerbSeen(roles, verbSeen, best, featuresVersion);
    if (margins) {
      let next = -Infinity;
      for (let label = 0; label < scores.length; label++) if (label !== best && scores[label]! > next) next = scores[label]!;
      margins[position] = scores[best]! - next;
    }
  }
  return out;
}

/** Tags one sentence; returns joint label indices. `codes` are the words' codes when the caller has them (`wordCodes`). */
export function tagWords(model: TaggerModel, words: readonly string[], codes: WordCodes = wordCodes(words)): number[] {
  const lower = words.map((word) => word.toLowerCase());
  const classCodes = ambiguityCodes(lower, model.ambiguity);
  const margins = new Float32Array(words.length);
  const roles = clauseRoles(model.labels);
  const cues = verbCues(lower, model.wordRoles, model.featuresVersion);
  const first = firstPass(model.perceptron, roles, model.featuresVersion, model.unambiguous, words, codes, classCodes, cues, margins);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(model.labels.length);
  const out: number[] = [];
  let verbSeen = model.featuresVersion >= 2 ? 0 : NO_VERB_SEEN;
  const verbless = firstPassVerbless(roles, first, model.featuresVersion);
  const repair = new VerblessRepair(model.labels, roles, words, cues);
  for (let position = 0; position < words.length; position++) {
    // A confident first-pass tag is kept: the second pass rarely changes it and costs as much again. In a sentence the
    // first pass gave no verb, every word gets the second pass.
    if (verbless !== 1 && margins[position]! >= model.secondPassMargin) {
      out.push(itemAt(first, position, 'first'));
    } else {
      const count = extractSecond(
        codes,
        classCodes,
        first,
        verbless,
        position,
        out[position - 1] ?? NO_TAG,
        out[position - 2] ?? NO_TAG,
        verbSeen,
        cues,
        feats,
      );
      model.second.score(feats, count, scores);
      const best = Perceptron.best(scores);
      out.push(best);
      repair.consider(position, scores, best, out[position - 1]);
    }
    verbSeen = nextVerbSeen(roles, verbSeen, itemAt(out, position, 'out'), model.featuresVersion);
  }
  repair.apply(out);
  return out;
}

/** The feature code of each word's ambiguity class, from its text (the class's label indices joined by commas). */
export function ambiguityClassCodes(ambiguityText: Iterable<readonly [string, string]>): Map<string, number> {
  return new Map(Array.from(ambiguityText, ([word, text]) => [word, hashString(text)]));
}

/** Builds the ambiguity-class and unambiguous-word lexicons from training sentences. */
export function buildLexicons(
  sentences: readonly TaggedSentence[],
  labels: readonly string[],
): {
  ambiguity: Map<string, number>;
  unambiguous: Map<string, number>;
  ambiguityText: Map<string, string>;
  verbal: Set<string>;
  wordRoles: Map<string, number>;
} {
  const byLower = new Map<string, Map<number, number>>();
  const byForm = new Map<string, Map<number, number>>();
  const count = (counts: Map<string, Map<number, number>>, key: string, label: number): void => {
    let inner = counts.get(key);
    if (!inner) counts.set(key, (inner = new Map<number, number>()));
    inner.set(label, (inner.get(label) ?? 0) + 1);
  };
  for (const sentence of sentences) {
    sentence.words.forEach((word, index) => {
      count(byLower, word.toLowerCase(), itemAt(sentence.labels, index, 'sentence.labels'));
      count(byForm, word, itemAt(sentence.labels, index, 'sentence.labels'));
    });
  }
  const roles = clauseRoles(labels);
  const ambiguityText = new Map<string, string>();
  const verbal = new Set<string>();
  for (const [word, wordLabels] of byLower) {
    let total = 0;
    let verbs = 0;
    for (const [label, occurrences] of wordLabels) {
      total += occurrences;
      if (roles[label] === ClauseRole.Verb) verbs += occurrences;
    }
    if (verbs >= VERBAL_MIN_COUNT && verbs / total >= VERBAL_MIN_SHARE) verbal.add(word);
    if (total < AMBIGUITY_MIN_COUNT) continue;
    const kept = [...wordLabels]
      .filter(([, occurrences]) => occurrences / total >= AMBIGUITY_MIN_SHARE)
      .map(([label]) => label)
      .sort((left, right) => left - right);
    ambiguityText.set(word, kept.join(','));
  }
  const ambiguity = ambiguityClassCodes(ambiguityText);
  const unambiguous = new Map<string, number>();
  for (const [form, formLabels] of byForm) {
    let total = 0;
    let best = -1;
    let bestCount = 0;
    for (const [label, occurrences] of formLabels) {
      total += occurrences;
      if (occurrences > bestCount) {
        bestCount = occurrences;
        best = label;
      }
    }
    if (total >= UNAMBIGUOUS_MIN_COUNT && bestCount / total >= UNAMBIGUOUS_MIN_SHARE) unambiguous.set(form, best);
  }
  return { ambiguity, unambiguous, ambiguityText, verbal, wordRoles: wordClauseRoles(ambiguityText, labels, verbal) };
}

interface Prepared {
  readonly codes: WordCodes;
  readonly classCodes: Int32Array;
  readonly cues: Int8Array;
}

/** One greedy pass trained over `epochs`; `rightTags` (per sentence) switches to second-pass features. */
function trainPass(
  sentences: readonly TaggedSentence[],
  prepared: readonly Prepared[],
  roles: Int8Array,
  options: TaggerTrainOptions,
  rightTags?: readonly (readonly number[])[],
): Perceptron {
  const classes = roles.length;
  const perceptron = new Perceptron(classes, options.bits);
  const next = random(options.seed);
  const order = sentences.map((_, index) => index);
  const feats = new Int32Array(MAX_FEATURES);
  const scores = new Float32Array(classes);
  for (let epoch = 1; epoch <= options.epochs; epoch++) {
    shuffle(order, next);
    let right = 0;
    let total = 0;
    for (const label of order) {
      const sentence = itemAt(sentences, label, 'sentences');
      const preparedSentence = itemAt(prepared, label, 'prepared');
      const history: number[] = [];
      let verbSeen = 0;
      const verbless = rightTags ? firstPassVerbless(roles, itemAt(rightTags, label, 'rightTags'), TAGGER_FEATURES_VERSION) : NO_VERB_SEEN;
      for (let position = 0; position < sentence.words.length; position++) {
        const gold = itemAt(sentence.labels, position, 'sentence.labels');
        const previousTag = history[position - 1] ?? NO_TAG;
        const secondPreviousTag = history[position - 2] ?? NO_TAG;
        const count = rightTags
          ? extractSecond(
              preparedSentence.codes,
              preparedSentence.classCodes,
              itemAt(rightTags, label, 'rightTags'),
              verbless,
              position,
              previousTag,
              secondPreviousTag,
              verbSeen,
              preparedSentence.cues,
              feats,
            )
          : extract(preparedSentence.codes, preparedSentence.classCodes, position, previousTag, secondPreviousTag, verbSeen, preparedSentence.cues, feats);
        perceptron.tick();
        perceptron.score(feats, count, scores);
        const guess = Perceptron.best(scores);
        perceptron.update(feats, count, gold, guess);
        history.push(guess);
        verbSeen = nextVerbSeen(roles, verbSeen, guess, TAGGER_FEATURES_VERSION);
        total++;
        if (guess === gold) right++;
      }
    }
    options.onEpoch?.(epoch, right / total);
  }
  perceptron.average();
  return perceptron;
}

/** Folds of the training data whose first-pass tags come from a first pass trained on the other folds. */
const FIRST_PASS_FOLDS = 2;

/**
 * Trains the tagger (greedy left-to-right, predicted history) and returns it averaged. The second
 * pass learns from first-pass tags of the training data predicted by jackknifing, so it learns how
 * far to trust them on unseen text.
 */
export function trainTagger(
  sentences: readonly TaggedSentence[],
  labels: readonly string[],
  options: TaggerTrainOptions,
): TaggerModel & { ambiguityText: Map<string, string>; verbal: Set<string> } {
  const { ambiguity, unambiguous, ambiguityText, verbal, wordRoles } = buildLexicons(sentences, labels);
  const lowerWords = sentences.map((sentence) => sentence.words.map((word) => word.toLowerCase()));
  const prepared = sentences.map((sentence, index) => ({
    codes: wordCodes(sentence.words),
    classCodes: ambiguityCodes(itemAt(lowerWords, index, 'lowerWords'), ambiguity),
    cues: verbCues(itemAt(lowerWords, index, 'lowerWords'), wordRoles, TAGGER_FEATURES_VERSION),
  }));
  const quiet = { ...options, onEpoch: undefined };
  const roles = clauseRoles(labels);
  const rightTags: number[][] = new Array<number[]>(sentences.length);
  for (let fold = 0; fold < FIRST_PASS_FOLDS; fold++) {
    const rest = sentences.map((_, index) => index).filter((index) => index % FIRST_PASS_FOLDS !== fold);
    const foldLexicons = buildLexicons(
      rest.map((index) => itemAt(sentences, index, 'sentences')),
      labels,
    );
    const foldPrepared = sentences.map((_, index) => ({
      codes: itemAt(prepared, index, 'prepared').codes,
      classCodes: ambiguityCodes(itemAt(lowerWords, index, 'lowerWords'), foldLexicons.ambiguity),
      cues: verbCues(itemAt(lowerWords, index, 'lowerWords'), foldLexicons.wordRoles, TAGGER_FEATURES_VERSION),
    }));
    const foldTagger = trainPass(
      rest.map((index) => itemAt(sentences, index, 'sentences')),
      rest.map((index) => itemAt(foldPrepared, index, 'foldPrepared')),
      roles,
      { ...quiet, seed: options.seed + 1 + fold },
    );
    sentences.forEach((sentence, index) => {
      if (index % FIRST_PASS_FOLDS === fold)
        rightTags[index] = firstPass(
          foldTagger,
          roles,
          TAGGER_FEATURES_VERSION,
          foldLexicons.unambiguous,
          sentence.words,
          itemAt(foldPrepared, index, 'foldPrepared').codes,
          itemAt(foldPrepared, index, 'foldPrepared').classCodes,
          itemAt(foldPrepared, index, 'foldPrepared').cues,
        );
    });
  }
  const perceptron = trainPass(sentences, prepared, roles, quiet);
  const second = trainPass(sentences, prepared, roles, options, rightTags);
  return {
    perceptron,
    second,
    secondPassMargin: options.secondPassMargin,
    labels,
    ambiguity,
    unambiguous,
    ambiguityText,
    verbal,
    wordRoles,
    featuresVersion: TAGGER_FEATURES_VERSION,
  };
}
