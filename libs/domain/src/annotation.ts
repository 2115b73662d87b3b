/**
 * The annotation JSON exchanged with entity extraction skills: the Stanford CoreNLP server's
 * JSON output (field names exactly as CoreNLP writes them, nulls omitted) plus `upos` on each
 * token. libs/nlp produces it, the annotation skill serves it, the skill components derive
 * `_entities` and `_merged_entities` from it, and the Token Occurrence Writer stores it. This
 * file is the one description of that shape.
 */

/** Named-entity label of a token outside any entity, as CoreNLP writes it. */
export const NO_ENTITY = 'O';

/** Relation name of the root arc in `basicDependencies`, as CoreNLP writes it. */
export const ROOT_RELATION = 'ROOT';

/** One token of a sentence; `index` is 1-based within the sentence. */
export interface AnnotationToken {
  readonly index: number;
  readonly word: string;
  readonly originalText: string;
  readonly lemma?: string;
  /** Character offsets into the whole document; the end is exclusive. */
  readonly characterOffsetBegin: number;
  readonly characterOffsetEnd: number;
  /** Penn Treebank (XPOS) tag. */
  readonly pos?: string;
  /** Universal POS tag (loom's addition to the CoreNLP shape). */
  readonly upos?: string;
  /** Entity type of the token, upper case (`PERSON`, `ORGANIZATION`, `LOCATION`, a dictionary type), or `O`. */
  readonly ner?: string;
  /** Whitespace between the previous token and this one, and between this one and the next. */
  readonly before: string;
  readonly after: string;
}

/** One basic Universal Dependencies arc; `governor` 0 with `dep` `ROOT` marks the root. */
export interface AnnotationDependency {
  /** Relation with its subtype, e.g. `nsubj`, `obl:tmod`, or `ROOT`. */
  readonly dep: string;
  /** 1-based token index of the head; 0 for the root arc. */
  readonly governor: number;
  readonly governorGloss: string;
  /** 1-based token index of the dependent. */
  readonly dependent: number;
  readonly dependentGloss: string;
}

/** An entity mention as CoreNLP's `entitymentions` lists it (token range end-exclusive). */
export interface AnnotationEntityMention {
  readonly docTokenBegin: number;
  readonly docTokenEnd: number;
  readonly tokenBegin: number;
  readonly tokenEnd: number;
  readonly text: string;
  readonly characterOffsetBegin: number;
  readonly characterOffsetEnd: number;
  readonly ner: string;
}

/** One sentence; `index` is 0-based within the document. */
export interface AnnotationSentence {
  readonly index: number;
  readonly tokens: readonly AnnotationToken[];
  /** Present when the pipeline parsed dependencies: the root arc first, then one arc per token. */
  readonly basicDependencies?: readonly AnnotationDependency[];
  /** Present when the pipeline ran NER. */
  readonly entitymentions?: readonly AnnotationEntityMention[];
}

/** A whole document's annotation. */
export interface Annotation {
  readonly docId?: string;
  readonly sentences: readonly AnnotationSentence[];
}
