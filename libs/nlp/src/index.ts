// The runtime: what services and skills load to annotate text. Trainers, evaluation and corpus
// readers are `@loom/nlp/training`, so loading this entry never loads them (src/index.test.ts).
export { CorpusFormatError, ModelLoadError, AnnotateOptionError } from './errors.js';
export { tokenize, splitWords, multiwordParts, type SurfaceToken, type TokenizerLexicon, type Word } from './tokenizer.js';
export { NlpPipeline, defaultModelsDir, resolveAnnotators, ANNOTATORS, type AnnotatorName, type AnnotateOptions, type PipelineOptions } from './pipeline.js';
export { parseDictionaryTsv, DictionaryMatcher, type DictionaryEntry } from './dictionary.js';
