// @loom/nlp-training: trainers, evaluation, corpus readers and the test corpora, for the training CLI
// (`npm run train`, `npm run eval -- nlp`), tests and benchmarks. It builds the models of @loom/nlp (the
// runtime), whose building blocks and errors it imports from there; nothing of the runtime is exported twice.
export { parseConllu, surfaceTokens, type ConlluSentence, type ConlluWord, type ConlluMultiwordToken, type ConlluSurfaceToken } from './conllu.js';
export { parseIob, normaliseTags, type IobSentence, type IobScheme, type ParseIobOptions } from './iob.js';
export { annotationFromConllu, type ConlluAnnotationOptions } from './conllu-annotation.js';
export { findDataDir, testDataDir, DATA_DIR_ENV } from './data-dir.js';
export { readEwt, EWT_DEV, EWT_TRAIN } from './ewt.js';
export { unerSplit, openNerExamples, gumEntities, UNER_DEV, type OpenNerSet } from './ner-data.js';
export { evaluate, segmentationScores, type Evaluation } from './evaluate.js';
export { trainTokenizerModel, trainTaggerModel, trainLemmatizerModel, trainParserModel, type TrainContext } from './train.js';
export { trainNerModel, NER_SETTINGS, NER_TRAINING_COMMAND } from './train-ner.js';
export { evalNlp, MODELS, compareWithCards, measuredFigures, type EvalOptions } from './eval-command.js';
