export { CorpusFormatError, ModelLoadError, AnnotateOptionError } from './errors.js';
export { parseConllu, surfaceTokens, type ConlluSentence, type ConlluWord, type ConlluMultiwordToken, type ConlluSurfaceToken } from './conllu.js';
export { parseIob, normaliseTags, entitySpans, type IobSentence, type EntitySpan, type IobScheme, type ParseIobOptions } from './iob.js';
export { findDataDir, DATA_DIR_ENV } from './data-dir.js';
