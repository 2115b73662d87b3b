import { statSync } from 'node:fs';
import { join } from 'node:path';
import { readEwt, EWT_DEV, EWT_TRAIN, Vocabulary } from './ewt.js';
import { GUM_ATTRIBUTION, readGumTreebank } from './gum.js';
import { gumTaggedSentences, jackknifeTags, slice, taggedSentences } from './train-tags.js';
import {
  dataEntry,
  EWT_ATTRIBUTION,
  EWT_LICENCE,
  writeCard,
  readModelFile,
  writeModelFile,
  decodeTagger,
  encodeLemmatizerFile,
  encodeParser,
  encodeTagger,
  encodeTokenizer,
  parseDependencies as parse,
  type ParserModel,
  tagWords,
  trainTagger,
  type TaggerModel,
  readCard,
  type ModelCard,
  trainSplitter,
  lemmatize,
  trainLemmatizer,
  ModelLoadError,
  itemAt,
} from '@loom/nlp';
import { meanParser, ParserTraining, type ParserExample } from './parser-training.js';
import type { ConlluSentence } from './conllu.js';
import { learnLexicon, splitterExamples } from './tokenizer-training.js';
import { segmentationScores } from './evaluate.js';

/** Where training reads data and writes models, and how it reports progress. */
export interface TrainContext {
  readonly dataDir: string;
  readonly modelsDir: string;
  readonly log: (line: string) => void;
  /** Use only the first N training sentences (tests, quick checks). */
  readonly limit?: number;
  /** Evaluate on only the first N dev sentences. */
  readonly devLimit?: number;
  readonly seed?: number;
  /** Override every model's epochs and hash-table bits (small slices in tests). */
  readonly epochs?: number;
  readonly bits?: number;
  /** Override the NER tagger's members (NER_SETTINGS.members; small slices in tests). */
  readonly members?: number;
  /** Called before a model trained by another run is loaded (a parallel run may still be writing it). */
  readonly beforeLoading?: (model: string) => void;
}

/**
 * Settings of the tagger; the second-pass margin was chosen on EWT dev (same accuracy, about 1.8 times the speed of
 * running the second pass everywhere). `gum`: GUM's open documents join EWT train (those of their sentences whose
 * every UPOS+XPOS pair EWT train has): with features version 3, EWT dev UPOS 94.97 -> 95.15 (docs/decisions.md).
 */
export const TAGGER_SETTINGS = { epochs: 10, bits: 22, prune: 0.0005, secondPassMargin: 20, gum: true };
/**
 * Settings of the parser. A beam of 4 scored as well on EWT dev as one of 8 (which took the pipeline under
 * 10,000 words per CPU second); the beam epochs start from the greedy ones' averaged weights. The model
 * is the mean of `members` parsers trained from consecutive seeds (see meanParser); its file keeps the
 * weights over `prune` of the largest, which scored as the unpruned mean on dev at two thirds of the size.
 * Training tags come from 10-fold jackknifing with taggers trained as the committed one. With `gum`, GUM's open
 * documents are training sentences too (docs/decisions.md).
 */
export const PARSER_SETTINGS = {
  members: 4,
  epochs: 12,
  beamEpochs: 12,
  beam: 4,
  /**
   * The beam the written model decodes with after beam epochs (trained with `beam`, its epoch chosen with it): on EWT
   * dev with GUM, raw-text LAS 80.50 with 4, 80.67 with 5, 80.65 with 6, 80.56 with 7, 80.63 with 8 (issue 37).
   */
  decodingBeam: 5,
  bits: 23,
  labelBits: 22,
  explore: 0.9,
  jackknifeFolds: 10,
  jackknifeEpochs: TAGGER_SETTINGS.epochs,
  prune: 0.004,
  /**
   * GUM's open documents (ner/gum, UD CoNLL-U, its titles attached as EWT's) join EWT train, tagged by a tagger trained
   * on all of EWT train: raw-text LAS 80.05 -> 80.67 with the GUM tagger and a decoding beam of 5 (docs/decisions.md).
   */
  gum: true,
};

/** UPOS and XPOS accuracy (%) of a tagger on sentences. */
export function taggerAccuracy(model: TaggerModel, sentences: readonly ConlluSentence[]): { upos: number; xpos: number } {
  let upos = 0;
  let xpos = 0;
  let count = 0;
  for (const sentence of sentences) {
    const predicted = tagWords(
      model,
      sentence.words.map((word) => word.form),
    );
    predicted.forEach((label, index) => {
      const [predictedUpos, predictedXpos] = itemAt(model.labels, label, 'model.labels').split('\t');
      const gold = itemAt(sentence.words, index, 'sentence.words');
      count++;
      if (predictedUpos === gold.upos) upos++;
      if (predictedXpos === gold.xpos) xpos++;
    });
  }
  return { upos: (100 * upos) / count, xpos: (100 * xpos) / count };
}

/** Trains the tagger on EWT train (and GUM's open documents, see TAGGER_SETTINGS) and writes models/tagger.bin and its card. */
export function trainTaggerModel(ctx: TrainContext): { model: TaggerModel; dev: { upos: number; xpos: number } } {
  const started = Date.now();
  const train = slice(readEwt(ctx.dataDir, EWT_TRAIN), ctx.limit);
  const dev = slice(readEwt(ctx.dataDir, EWT_DEV), ctx.devLimit);
  const tags = new Vocabulary();
  const ewtExamples = taggedSentences(train, tags);
  const gum = TAGGER_SETTINGS.gum ? gumTaggedSentences(ctx, tags) : { sentences: [], files: [] };
  const examples = [...ewtExamples, ...gum.sentences];
  const model = trainTagger(examples, tags.items, {
    epochs: ctx.epochs ?? TAGGER_SETTINGS.epochs,
    bits: ctx.bits ?? TAGGER_SETTINGS.bits,
    secondPassMargin: TAGGER_SETTINGS.secondPassMargin,
    seed: ctx.seed ?? 1,
    onEpoch: (epoch, accuracy) => ctx.log(`tagger epoch ${epoch}/${ctx.epochs ?? TAGGER_SETTINGS.epochs}: train accuracy ${(100 * accuracy).toFixed(2)}`),
  });
  const devScores = taggerAccuracy(model, dev);
  ctx.log(`tagger dev UPOS ${devScores.upos.toFixed(2)} XPOS ${devScores.xpos.toFixed(2)}`);
  writeModel(ctx, 'tagger', started, encodeTagger(model, TAGGER_SETTINGS.prune), {
    data: treebankData(ctx, gum.files, 'development scores'),
    settings: {
      ...TAGGER_SETTINGS,
      features:
        "word, lower-case word, suffixes 1-5, prefixes 1-3, shape, two previous tags, ±2 words and their pairs, affixes of w-1 and w+1, ambiguity classes of w0..w+2; verb seen in the clause (a verb or auxiliary tagged since the sentence start, punctuation or a wh-word; a conjunction before the clause's verb marks the clause coordinated, after it starts a new one) with the previous tag and the suffix, and with the previous tag and the ambiguity class of w0; verb cues (w0 may be a verb, a sure verb follows before the next boundary) with the verb-seen state and the previous tag and/or the ambiguity class of w0; second pass: the first pass's tags of w+1, w+2 and whether it tagged any verb; a full sentence tagged without a verb gets its likeliest verb back (VerblessRepair)",
      passes: 'two greedy left-to-right passes; the second trained on first-pass tags jackknifed in 2 folds',
      labels: 'joint UPOS+XPOS',
      trainingSentences: examples.length,
      devSentences: dev.length,
    },
    epochs: TAGGER_SETTINGS.epochs,
    dev: { upos: round(devScores.upos), xpos: round(devScores.xpos) },
    licence: EWT_LICENCE,
    attribution: treebankAttribution(gum.files),
  });
  return { model, dev: devScores };
}

/**
 * Writes models/<name>.bin and its card; the card's file, checksum, size and training time (since `started`,
 * a Date.now()) are filled in here.
 */
export function writeModel(
  ctx: TrainContext,
  name: string,
  started: number,
  encoded: { header: Record<string, unknown>; sections: Map<string, Uint8Array> },
  card: Omit<ModelCard, 'name' | 'file' | 'sha256' | 'bytes' | 'trainingSeconds'>,
): void {
  const file = join(ctx.modelsDir, `${name}.bin`);
  const digest = writeModelFile(file, encoded.header, encoded.sections);
  const trainingSeconds = Math.round((Date.now() - started) / 1000);
  writeCard(ctx.modelsDir, { name, file: `${name}.bin`, sha256: digest, bytes: statSync(file).size, ...card, trainingSeconds });
}

/** A score rounded to two decimals, as the cards keep them. */
export function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** UAS and LAS (%) of a parser on sentences with the given tag codes. */
export function parserScores(model: ParserModel, examples: readonly ParserExample[]): { uas: number; las: number } {
  let uas = 0;
  let las = 0;
  let count = 0;
  for (const example of examples) {
    const parsed = parse(model, example);
    parsed.heads.forEach((head, index) => {
      count++;
      if (head === example.heads[index]) {
        uas++;
        if (parsed.labels[index] === example.labels[index]) las++;
      }
    });
  }
  return { uas: (100 * uas) / count, las: (100 * las) / count };
}

/** Loads the trained tagger from the models directory (checksum verified). */
export function loadTaggerFrom(modelsDir: string): TaggerModel {
  const card = readCard(modelsDir, 'tagger');
  return decodeTagger('tagger', readModelFile('tagger', join(modelsDir, card.file), card.sha256));
}

/** The data of a card of a model trained on the treebanks: EWT train, the GUM documents trained on (none when GUM is off), EWT dev for `devUse`. */
function treebankData(ctx: TrainContext, gumFiles: readonly string[], devUse: string): ModelCard['data'] {
  return [
    dataEntry(ctx.dataDir, EWT_TRAIN, 'training'),
    ...gumFiles.map((file) => dataEntry(ctx.dataDir, file, 'training')),
    dataEntry(ctx.dataDir, EWT_DEV, devUse),
  ];
}

/** The attribution of a card of a model trained on the treebanks: EWT's, and GUM's when GUM documents were trained on. */
function treebankAttribution(gumFiles: readonly string[]): string[] {
  return gumFiles.length > 0 ? [EWT_ATTRIBUTION, GUM_ATTRIBUTION] : [EWT_ATTRIBUTION];
}

/** What a parser model's card says besides its scores. */
interface ParserRun {
  readonly ctx: TrainContext;
  readonly tags: readonly string[];
  readonly trainingSentences: number;
  readonly devSentences: number;
  /** GUM documents trained on (relative to the data directory); none without PARSER_SETTINGS.gum. */
  readonly gumFiles: readonly string[];
  /** Date.now() when training started. */
  readonly started: number;
}

/** Writes models/parser.bin and its card. */
function writeParser(run: ParserRun, trained: ParserModel, epoch: number, scores: { uas: number; las: number }): void {
  const { ctx } = run;
  const model = trained.beam > 1 ? { ...trained, beam: PARSER_SETTINGS.decodingBeam } : trained;
  writeModel(ctx, 'parser', run.started, encodeParser(model, run.tags, PARSER_SETTINGS.prune), {
    data: treebankData(ctx, run.gumFiles, 'development scores (epoch choice)'),
    settings: {
      ...PARSER_SETTINGS,
      system:
        'arc-hybrid, averaged perceptron, per-direction labelers; greedy dynamic-oracle epochs, then beam search with max-violation global updates; the weights are the mean of the members, trained from consecutive seeds',
      tags: 'jackknifed predicted (train), tagger model (dev)',
      // 1 when the epoch kept is a greedy one: its weights are decoded greedily, as they were trained
      decodingBeam: model.beam,
      trainingSentences: run.trainingSentences,
      devSentences: run.devSentences,
    },
    epochs: epoch,
    dev: { uas: round(scores.uas), las: round(scores.las) },
    licence: EWT_LICENCE,
    attribution: treebankAttribution(run.gumFiles),
  });
}

/** The members of the parser: alike but for their seed (shuffling and exploration). */
function parserMembers(ctx: TrainContext, examples: readonly ParserExample[], relations: readonly string[]): ParserTraining[] {
  return Array.from(
    { length: PARSER_SETTINGS.members },
    (_, member) =>
      new ParserTraining(examples, relations, {
        epochs: ctx.epochs ?? PARSER_SETTINGS.epochs,
        bits: ctx.bits ?? PARSER_SETTINGS.bits,
        labelBits: ctx.bits === undefined ? PARSER_SETTINGS.labelBits : ctx.bits - 1,
        explore: PARSER_SETTINGS.explore,
        beamEpochs: ctx.epochs ?? PARSER_SETTINGS.beamEpochs,
        beam: PARSER_SETTINGS.beam,
        seed: (ctx.seed ?? 1) + member,
      }),
  );
}

/**
 * Trains the parser on EWT train with jackknifed predicted tags (each fold tagged by a tagger
 * trained on the other folds) and, with PARSER_SETTINGS.gum, on GUM's open documents, tagged by a tagger of
 * all EWT train (the taggers of training never saw GUM, although the committed one did: their tags are, if
 * anything, worse than those the parser gets at run time); dev is tagged by the committed tagger. The members
 * train epoch by epoch side by side; after every epoch that improves their mean's dev LAS, the mean is written to
 * models/parser.bin with its card, so an interrupted run leaves its best. The mean is scored and
 * written as its weights decode best: greedily after a greedy epoch, with the beam after a beam epoch.
 */
export function trainParserModel(ctx: TrainContext): { uas: number; las: number } {
  const started = Date.now();
  const train = slice(readEwt(ctx.dataDir, EWT_TRAIN), ctx.limit);
  const dev = slice(readEwt(ctx.dataDir, EWT_DEV), ctx.devLimit);
  // Tag codes are indices into the joint labels in order of first use in train, as the tagger numbers them.
  const tags = new Vocabulary();
  taggedSentences(train, tags);
  const relations = new Vocabulary();
  const gum = PARSER_SETTINGS.gum ? readGumTreebank(ctx.dataDir) : { sentences: [], files: [] };
  const others = slice(gum.sentences, ctx.limit);
  const sentences = [...train, ...others];
  const predicted = jackknifeTags(
    ctx,
    {
      folds: PARSER_SETTINGS.jackknifeFolds,
      epochs: PARSER_SETTINGS.jackknifeEpochs,
      bits: TAGGER_SETTINGS.bits,
      secondPassMargin: TAGGER_SETTINGS.secondPassMargin,
    },
    train,
    others,
    tags,
  );
  const toExample = (sentence: ConlluSentence, tagCodes: readonly number[]): ParserExample => ({
    words: sentence.words.map((word) => word.form),
    tags: tagCodes,
    heads: sentence.words.map((word) => word.head),
    labels: sentence.words.map((word) => relations.add(word.deprel)),
  });
  ctx.beforeLoading?.('tagger');
  const tagger = loadTaggerFrom(ctx.modelsDir);
  if (tagger.labels.join('\n') !== tags.items.join('\n'))
    throw new ModelLoadError('tagger', 'its labels differ from those of the training data; retrain the tagger first');
  const examples = sentences.map((sentence, index) => toExample(sentence, itemAt(predicted, index, 'jackknifed tags')));
  const devExamples = dev.map((sentence) =>
    toExample(
      sentence,
      tagWords(
        tagger,
        sentence.words.map((word) => word.form),
      ),
    ),
  );
  const run: ParserRun = { ctx, tags: tags.items, trainingSentences: examples.length, devSentences: dev.length, gumFiles: gum.files, started };
  const greedyEpochs = ctx.epochs ?? PARSER_SETTINGS.epochs;
  const members = parserMembers(ctx, examples, relations.items);
  const epochs = itemAt(members, 0, 'parser members').epochs;
  let best = { uas: -1, las: -1 };
  for (let epoch = 1; epoch <= epochs; epoch++) {
    for (const member of members) member.runEpoch();
    const mean = meanParser(members.map((member) => member.averaged()));
    const scores = parserScores(mean, devExamples);
    ctx.log(
      `parser epoch ${epoch}/${epochs}${epoch > greedyEpochs ? ' (beam)' : ''}: dev UAS ${scores.uas.toFixed(2)} LAS ${scores.las.toFixed(2)}, decoded with a beam of ${mean.beam} (${Math.round((Date.now() - started) / 1000)} s)`,
    );
    if (scores.las > best.las) {
      best = scores;
      writeParser(run, mean, epoch, scores);
      ctx.log(`parser: wrote epoch ${epoch}`);
    }
  }
  return best;
}

/** Settings of the tokenizer's sentence splitter. */
export const TOKENIZER_SETTINGS = { epochs: 4, bits: 18, prune: 0.0005 };

/** Learns the tokenizer lexicon and trains the sentence splitter on EWT train; writes models/tokenizer.bin. */
export function trainTokenizerModel(ctx: TrainContext): Record<string, number> {
  const started = Date.now();
  const train = slice(readEwt(ctx.dataDir, EWT_TRAIN), ctx.limit);
  const dev = slice(readEwt(ctx.dataDir, EWT_DEV), ctx.devLimit);
  const lexicon = learnLexicon(train);
  const splitter = trainSplitter(splitterExamples(train), lexicon, {
    epochs: ctx.epochs ?? TOKENIZER_SETTINGS.epochs,
    seed: ctx.seed ?? 1,
    bits: ctx.bits ?? TOKENIZER_SETTINGS.bits,
  });
  const scores = segmentationScores(lexicon, splitter, dev);
  ctx.log(`tokenizer dev: tokens F1 ${scores.tokens.toFixed(2)}, words F1 ${scores.words.toFixed(2)}, sentences F1 ${scores.sentences.toFixed(2)}`);
  writeModel(ctx, 'tokenizer', started, encodeTokenizer(lexicon, splitter, TOKENIZER_SETTINGS.prune), {
    data: [dataEntry(ctx.dataDir, EWT_TRAIN, 'training'), dataEntry(ctx.dataDir, EWT_DEV, 'development scores')],
    settings: {
      ...TOKENIZER_SETTINGS,
      lexicon: {
        abbreviations: lexicon.abbreviations.size,
        hyphenated: lexicon.hyphenated.size,
        multiwordTokens: lexicon.multiwordTokens.size,
        hyphenPrefixes: lexicon.hyphenPrefixes.size,
      },
      trainingSentences: train.length,
      devSentences: dev.length,
    },
    epochs: TOKENIZER_SETTINGS.epochs,
    dev: { tokensF1: round(scores.tokens), wordsF1: round(scores.words), sentencesF1: round(scores.sentences) },
    licence: EWT_LICENCE,
    attribution: [EWT_ATTRIBUTION],
  });
  return scores;
}

/** Learns the lemmatizer from EWT train; writes models/lemmatizer.bin. */
export function trainLemmatizerModel(ctx: TrainContext): number {
  const started = Date.now();
  const train = slice(readEwt(ctx.dataDir, EWT_TRAIN), ctx.limit);
  const dev = slice(readEwt(ctx.dataDir, EWT_DEV), ctx.devLimit);
  const model = trainLemmatizer(train.flatMap((sentence) => sentence.words));
  let right = 0;
  let count = 0;
  for (const sentence of dev)
    for (const word of sentence.words) {
      count++;
      if (lemmatize(model, word.form, word.xpos) === word.lemma) right++;
    }
  const accuracy = (100 * right) / count;
  ctx.log(`lemmatizer dev accuracy (gold XPOS) ${accuracy.toFixed(2)}`);
  writeModel(ctx, 'lemmatizer', started, encodeLemmatizerFile(model), {
    data: [dataEntry(ctx.dataDir, EWT_TRAIN, 'training'), dataEntry(ctx.dataDir, EWT_DEV, 'development scores')],
    settings: {
      method: '(form, XPOS) lookup, then per-XPOS suffix edit rules (suffixes up to 5, seen twice)',
      entries: model.lexicon.size,
      rules: model.rules.size,
    },
    epochs: 1,
    dev: { lemmaGoldXpos: round(accuracy) },
    licence: EWT_LICENCE,
    attribution: [EWT_ATTRIBUTION],
  });
  return accuracy;
}
