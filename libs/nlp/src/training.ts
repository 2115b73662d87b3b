// `@loom/nlp/training`: trainers, evaluation, corpus readers and the test corpora, for the
// training CLI, tests and benchmarks. The runtime is `@loom/nlp`.
export { CorpusFormatError } from './errors.js';
export { parseConllu, surfaceTokens, type ConlluSentence, type ConlluWord, type ConlluMultiwordToken, type ConlluSurfaceToken } from './conllu.js';
export { parseIob, normaliseTags, entitySpans, type IobSentence, type EntitySpan, type IobScheme, type ParseIobOptions } from './iob.js';
export { annotationFromConllu, type ConlluAnnotationOptions } from './conllu-annotation.js';
export { findDataDir, testDataDir, DATA_DIR_ENV } from './data-dir.js';
export { readEwt, EWT_DEV, EWT_TRAIN } from './ewt.js';
export { unerSplit, openNerExamples, gumEntities, UNER_DEV, type OpenNerSet } from './ner-data.js';
export { evaluate, segmentationScores, type Evaluation } from './evaluate.js';
export { readCard, type ModelCard } from './model-card.js';
export { trainTokenizerModel, trainTaggerModel, trainLemmatizerModel, trainParserModel, trainNerModel, NER_SETTINGS, type TrainContext } from './train.js';
export { evalNlp, MODELS, compareWithCards, measuredFigures, type EvalOptions } from './eval-command.js';
