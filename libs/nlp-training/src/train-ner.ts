// Training of the NER model: the open sets and UNER's training documents, tagged by the trained tagger.
import {
  dataEntry,
  encodeNer,
  EWT_ATTRIBUTION,
  itemAt,
  Perceptron,
  readCard,
  tagEntities,
  tagWords,
  trainNer,
  type NerExample,
  type NerModel,
} from '@loom/nlp';
import { entityCardFigures, entityScores, formatEntityScores, tagsOfWordTypes, type EntityScores } from './entity-scores.js';
import { compromiseNameLexicon } from './name-lexicon.js';
import { caseCopies, openNerExamples, unerSplit, UNER_DEV, type CaseCopyShares, type LabelledSentence, type OpenNerSet } from './ner-data.js';
import { openNameLexicon, OPEN_NAME_LISTS, OPEN_NAME_LISTS_ATTRIBUTION, OPEN_NAME_LISTS_LICENCE, type OpenNameListOptions } from './open-name-lexicon.js';
import { slice } from './train-tags.js';
import { EWT_TRAIN } from './ewt.js';
import { NASA_TEXT, trainingWordClasses } from './word-classes.js';
import { loadTaggerFrom, round, writeModel, type TrainContext } from './train.js';

/**
 * Settings of the NER tagger; UNER training documents are counted this many times. Chosen by cross-validation over
 * the UNER training documents (three parts by document, each scored by the model that did not see it, with the shipped
 * tagger's tags), never on the held-out ones. `caseCopies`: shares of the training sentences also taught in capitals
 * and in lower case, for web text written so (micro F1 of the three parts as written / in capitals / in lower case,
 * seed 1: no copies 67.50 / 60.20 / 40.15, 0.1 each 68.17 / 60.43 / 47.93, 0.2 each 67.41 / 58.56 / 49.67).
 * Issue 54 Must 4, micro F1, mean of seeds 1-5: issue 37's settings (2 epochs, no lists, one seed) 68.66; `nameLists`
 * 69.85; with 3 / 4 / 6 epochs 70.21 / 70.41 / 70.23; 4 epochs and 4 `members` 71.21 (3 epochs and 4 members 70.96;
 * members: the mean of seeds 1, 11 and 21, each the first of four). Also measured, 5 seeds, and not kept: UPOS only
 * 68.44 (with lists 69.64), a proper-noun flag only 68.70 (with lists 68.96), no parts of speech 67.42, the version-2
 * tagger's tags for training 68.47, `wordClasses` with the lists 69.30, unerWeight 3 with the lists 69.74
 * (docs/decisions.md, issue 54 Must 4).
 */
export const NER_SETTINGS = {
  epochs: 4,
  bits: 22,
  prune: 0.0005,
  unerWeight: 2,
  gazetteerFolds: 5,
  openSets: ['wikigold', 'btc'] as OpenNerSet[],
  caseCopies: { upper: 0.1, lower: 0.1 } as CaseCopyShares,
  nameLists: OPEN_NAME_LISTS as OpenNameListOptions | undefined,
  wordClasses: false,
  /** The model's weights are the mean of this many taggers trained alike from consecutive seeds (the seed and on). */
  members: 4,
};

/** The command that rebuilds libs/nlp/models/ner.bin byte for byte from the repository (with the committed tagger). */
export const NER_TRAINING_COMMAND = 'npm run train -- ner';

/**
 * Exact-span NER scores of a model on sentences, its spans read as the pipeline's per-word types give them (adjacent
 * spans of one type merge), so that the card holds what `npm run eval -- nlp` measures.
 */
export function nerScores(model: NerModel, sentences: readonly NerExample[]): EntityScores {
  return entityScores(
    sentences.map((sentence) => ({
      gold: sentence.tags,
      predicted: tagsOfWordTypes(tagEntities(model, sentence.tokens, sentence.pos).map((tag) => (tag === 'O' ? 'O' : tag.slice(2)))),
    })),
  );
}

/**
 * Trains NER on the open sets plus the UNER dev documents not held out, each sentence tagged by the trained tagger
 * (from the models directory, as at annotation time), with compromise's name lexicon; scores on the held-out
 * documents; writes models/ner.bin.
 */
export async function trainNerModel(ctx: TrainContext): Promise<EntityScores> {
  const started = Date.now();
  ctx.beforeLoading?.('tagger');
  const tagger = loadTaggerFrom(ctx.modelsDir);
  // the tags are features, so a model is rebuilt only from the tagger it was trained with: the card names it
  const taggerSha256 = readCard(ctx.modelsDir, 'tagger').sha256;
  const tagged = (sentence: { tokens: readonly string[]; tags: readonly string[] }): NerExample => ({
    tokens: sentence.tokens,
    tags: sentence.tags,
    pos: tagWords(tagger, sentence.tokens).map((label) => itemAt(tagger.labels, label, 'tagger.labels')),
  });
  const open = openNerExamples(ctx.dataDir, NER_SETTINGS.openSets);
  const uner = unerSplit(ctx.dataDir);
  const withCopies = (sentences: readonly LabelledSentence[]): LabelledSentence[] => [...sentences, ...caseCopies(sentences, NER_SETTINGS.caseCopies)];
  const examples = withCopies(slice(open.examples, ctx.limit)).map(tagged);
  const unerTrain = withCopies(slice(uner.train, ctx.limit)).map(tagged);
  for (let copy = 0; copy < NER_SETTINGS.unerWeight; copy++) examples.push(...unerTrain);
  const heldOut = slice(uner.heldOut, ctx.devLimit).map(tagged);
  const lexicon = await compromiseNameLexicon();
  const nameLists = NER_SETTINGS.nameLists ? await openNameLexicon(NER_SETTINGS.nameLists) : new Map<string, string>();
  const wordClasses = NER_SETTINGS.wordClasses ? trainingWordClasses(ctx.dataDir, NER_SETTINGS.openSets) : new Map<string, string>();
  const epochs = ctx.epochs ?? NER_SETTINGS.epochs;
  const members = ctx.members ?? NER_SETTINGS.members;
  const seed = ctx.seed ?? 1;
  const trained = Array.from({ length: members }, (_, member) =>
    trainNer(examples, {
      epochs,
      bits: ctx.bits ?? NER_SETTINGS.bits,
      seed: seed + member,
      gazetteerFolds: NER_SETTINGS.gazetteerFolds,
      lexicon,
      nameLists,
      wordClasses,
      onEpoch: (epoch, accuracy) => ctx.log(`ner member ${member + 1}/${members} epoch ${epoch}/${epochs}: train tag accuracy ${(100 * accuracy).toFixed(2)}`),
    }),
  );
  // The members differ only in their weights (the gazetteer and lists are built from the same data), so their mean
  // is one model: it scores as well as the members on average, without the spread of one seed.
  const model = { ...itemAt(trained, 0, 'members'), perceptron: Perceptron.mean(trained.map((member) => member.perceptron)) };
  const scores = nerScores(model, heldOut);
  ctx.log(`ner held-out UNER: ${formatEntityScores(scores)}`);
  writeModel(ctx, 'ner', started, encodeNer(model, NER_SETTINGS.prune), {
    data: [
      ...open.files.map((file) => dataEntry(ctx.dataDir, file, 'training')),
      dataEntry(ctx.dataDir, UNER_DEV, 'training (documents i with i % 4 != 3), evaluation (held out: i % 4 == 3)'),
      ...(NER_SETTINGS.wordClasses
        ? [
            dataEntry(ctx.dataDir, EWT_TRAIN, 'word classes (the case of its words, unlabelled)'),
            dataEntry(ctx.dataDir, NASA_TEXT, 'word classes (unlabelled)'),
          ]
        : []),
    ],
    settings: {
      command: NER_TRAINING_COMMAND,
      seed,
      tagger: { file: 'tagger.bin', sha256: taggerSha256 },
      ...NER_SETTINGS,
      members,
      features:
        'word, lower-case word, shape, affixes, ±2 words, previous tag (with word, shape, previous word, part of speech); parts of speech (the tagger, ±1); gazetteer of training entities (jackknifed in gazetteerFolds folds for training sentences); name lexicon of compromise (±1); open name lists when nameLists is set (±1, with capitalisation and part of speech); word classes when wordClasses is set (how often a word is capitalised inside sentences of the training text, EWT train and the NASA lesson; ±1, with capitalisation and sentence start); training adds copies of caseCopies shares of the sentences in capitals and in lower case',
      lexiconEntries: lexicon.size,
      ...(nameLists.size > 0 ? { nameListEntries: nameLists.size } : {}),
      ...(wordClasses.size > 0 ? { wordClassEntries: wordClasses.size } : {}),
      decoding:
        "Viterbi over valid IOB2 transitions (first-order), structured-perceptron training (averaged); the weights are the mean of the members; then, in the pipeline (not in the model file), the whole-name repair (libs/nlp entity-repair.ts: a hyphen inside a name, a lone first name's or an initial's surname, a name after a person's title) and organisations by suffix, head and bracketed acronym (organisation-rules.ts); persons corrected where the sentence says otherwise (person-rules.ts: a storm's name, a title phrase, a 'person' in a list of places); then, across the document's sentences, a name found at one mention keeps its type at its untagged mentions, a person's surname alone is that person and an acronym defined in brackets after an organisation's name is that organisation (document-entities.ts)",
      trainingSentences: examples.length,
      heldOutSentences: heldOut.length,
    },
    epochs,
    dev: Object.fromEntries(Object.entries(entityCardFigures(scores)).map(([name, value]) => [name, round(value)])),
    licence: `CC BY-SA 4.0 (UNER English EWT, the tagger) and CC BY 4.0 (WikiGold, Broad Twitter Corpus); name lexicon MIT (compromise)${NER_SETTINGS.nameLists ? `; ${OPEN_NAME_LISTS_LICENCE}` : ''}${NER_SETTINGS.wordClasses ? '; word classes from UD English EWT train (CC BY-SA 4.0) and a NASA text (public domain)' : ''}`,
    attribution: [
      'Universal NER English EWT (UNER_English-EWT commit 8ed072d; Mayhew et al., NAACL 2024), CC BY-SA 4.0.',
      'WikiGold (Balasuriya et al. 2009), CC BY 4.0.',
      'Broad Twitter Corpus (Derczynski et al., COLING 2016), CC BY 4.0.',
      'Name lexicon from compromise 14.17.0 (Spencer Kelly and contributors), MIT licence.',
      ...(NER_SETTINGS.nameLists ? OPEN_NAME_LISTS_ATTRIBUTION : []),
      ...(NER_SETTINGS.wordClasses ? [EWT_ATTRIBUTION, 'NASA lesson learned 164448 (lessons-learned entry, a work of the US government), public domain.'] : []),
    ],
  });
  return scores;
}
