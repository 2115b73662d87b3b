// The runtime: what services and skills load to annotate text. Trainers' commands, evaluation and corpus
// readers are the package @loom/nlp-training, which depends on this one and never the other way round
// (src/index.test.ts).
export { CorpusFormatError, ModelLoadError, AnnotateOptionError } from './errors.js';
export { tokenize, splitWords, multiwordParts, type SurfaceToken, type TokenizerLexicon, type Word } from './tokenizer.js';
export { NlpPipeline, defaultModelsDir, resolveAnnotators, ANNOTATORS, type AnnotatorName, type AnnotateOptions, type PipelineOptions } from './pipeline.js';
export { parseDictionaryTsv, DictionaryMatcher, type DictionaryEntry } from './dictionary.js';

// Model building blocks, for @loom/nlp-training (services need none of them). Each model's trainer lives beside
// its decoder here, so a model is trained on the very features it runs with; @loom/nlp-training reads the corpora,
// calls these and writes the model files and cards.

// Checked access to lists and maps this package sized itself (a miss is a bug: IndexOutOfRangeError, MissingEntryError).
export { itemAt, entryOf, IndexOutOfRangeError, MissingEntryError } from './checked.js';
// Feature hashing and the seeded PRNG that makes training reproducible.
export { hashString, random as seededRandom, shuffle } from './hashing.js';
export { Perceptron, type PerceptronTrainOptions } from './perceptron.js';
export { entitySpans, type EntitySpan } from './entity-spans.js';
export { repairEntityTags, type EntityRepairContext } from './entity-repair.js';
export { markOrganisations } from './organisation-rules.js';
export { correctPersons } from './person-rules.js';
export { harmoniseDocumentTags, type DocumentSentence } from './document-entities.js';
export { PERSON_TITLES, isPersonTitle } from './person-titles.js';
export { segmentText, trainSplitter, type SplitterModel, type SplitterExample } from './sentences.js';
export { tagWords, trainTagger, type TaggerModel, type TaggedSentence } from './tagger.js';
export { lemmatize, trainLemmatizer, type LemmatizerModel } from './lemmatizer.js';
export { NER_TAGS, tagEntities, trainNer, type NerExample, type NerModel } from './ner.js';
// The arc-hybrid parser's decoder and the transition system its trainer (@loom/nlp-training) walks.
export {
  parse as parseDependencies,
  Beam as ParserBeam,
  bestLabel as bestParserLabel,
  codesOf as parserCodes,
  extract as extractParserFeatures,
  FeatureWindow as ParserFeatureWindow,
  legal as legalParserAction,
  LEFT as PARSER_LEFT,
  MAX_FEATURES as PARSER_MAX_FEATURES,
  NONE as PARSER_NONE,
  NULL_LABEL as PARSER_NULL_LABEL,
  SHIFT as PARSER_SHIFT,
  State as ParserState,
  type Codes as ParserCodes,
  type ParserInput,
  type ParserModel,
} from './parser.js';
// Model files (sections, weights, SHA-256) and the codecs of each model in them.
export { readModelFile, writeModelFile, encodeModelFile, decodeModelFile, type ModelFile } from './model-file.js';
export { encodeTokenizer, encodeTagger, decodeTagger, encodeLemmatizerFile, encodeParser, encodeNer, decodeNer } from './models.js';
// The card committed beside each model file: what it was trained on, how, and its scores.
export { readCard, writeCard, cardPath, dataEntry, EWT_LICENCE, EWT_ATTRIBUTION, type ModelCard } from './model-card.js';
