export { CorpusFormatError, ModelLoadError, AnnotateOptionError } from './errors.js';
export { parseConllu, surfaceTokens, type ConlluSentence, type ConlluWord, type ConlluMultiwordToken, type ConlluSurfaceToken } from './conllu.js';
export { parseIob, normaliseTags, entitySpans, type IobSentence, type EntitySpan, type IobScheme, type ParseIobOptions } from './iob.js';
export { findDataDir, testDataDir, DATA_DIR_ENV } from './data-dir.js';
export { tokenize, splitWords, multiwordParts, type SurfaceToken, type TokenizerLexicon, type Word } from './tokenizer.js';
export {
  NlpPipeline,
  annotate,
  defaultModelsDir,
  resolveAnnotators,
  ANNOTATORS,
  type AnnotatorName,
  type AnnotateOptions,
  type PipelineOptions,
} from './pipeline.js';
export { parseDictionaryTsv, DictionaryMatcher, type DictionaryEntry } from './dictionary.js';
export { evaluate, segmentationScores, type Evaluation } from './evaluate.js';
export { readEwt, EWT_DEV, EWT_TRAIN } from './ewt.js';
export { unerSplit, openNerExamples, gumEntities, UNER_DEV, type OpenNerSet } from './ner-data.js';
export { readCard, type ModelCard } from './model-card.js';
export { trainTokenizerModel, trainTaggerModel, trainLemmatizerModel, trainParserModel, trainNerModel, NER_SETTINGS, type TrainContext } from './train.js';
export { evalNlp, MODELS, compareWithCards, measuredFigures, type EvalOptions } from './eval-command.js';
export { annotationFromConllu, type ConlluAnnotationOptions } from './conllu-annotation.js';
