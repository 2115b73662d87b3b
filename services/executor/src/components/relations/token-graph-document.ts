import { createHash } from 'node:crypto';
import { type CheckedAnnotation, COMPLETE_ANNOTATION_SCHEMA, NO_ENTITY, parseWithSchema, ROOT_RELATION, ValidationError } from '@loom/domain';

// The rows of the token graph (token-graph.ts) of one document, from loom's annotation JSON, checked.

/** Every property a TagOccurrence may have, declared so that its statement is the same for every batch. */
export const TOKEN_PROPERTIES = [
  'id',
  'tokenIndex',
  'startPosition',
  'endPosition',
  'value',
  'lemma',
  'pos',
  'upos',
  'ne',
  'entityId',
  'entityStart',
  'entityEnd',
  'entityValue',
  'isRoot',
] as const;

/** Language suffix of Tag ids, as neo4j-nlp writes them (`<lemma>_<language>`); loom's pipeline is English. */
const TAG_LANGUAGE = 'en';

/** Relations in the UD v2 style: a base relation and an optional subtype after a colon. */
const DEPENDENCY = /^([A-Za-z]+)(?::([A-Za-z]+))?$/;

/** A named-entity label that may be written into a statement's text: an identifier. */
const ENTITY_LABEL = /^NE_[A-Za-z0-9_]+$/;

type AnnotationSentence = CheckedAnnotation['sentences'][number];

/** A token occurrence: the id of its Tag and its properties. */
export interface TokenRow {
  readonly tag: string;
  readonly properties: Record<string, string | number | boolean>;
}

/** A dependency between two tokens of one sentence, by their positions in its `tokens`. */
export interface DependencyRow {
  /** The relationship type, upper case (`NSUBJ`, `ROOT`). */
  readonly type: string;
  /** Position of the governor (the root's own, for ROOT). */
  readonly from: number;
  /** Position of the dependent. */
  readonly to: number;
  readonly specific: string | null;
}

/** A sentence with its token occurrences, in the annotation's order, and the dependencies between them. */
export interface SentenceRow {
  readonly id: string;
  readonly sentenceNumber: number;
  readonly text: string;
  readonly tokens: readonly TokenRow[];
  readonly dependencies: readonly DependencyRow[];
}

/** One document ready to be written: its id, content hash and its sentences, in the annotation's order. */
export interface TokenGraphDocument {
  readonly id: string;
  readonly hash: string;
  readonly sentences: readonly SentenceRow[];
  /** Tag values by Tag id. */
  readonly tags: ReadonlyMap<string, string>;
  /** The named-entity labels (`NE_Person`) of Tags, by Tag id, for the Neo4j-only labels. */
  readonly tagLabels: ReadonlyMap<string, ReadonlySet<string>>;
  readonly counts: { readonly sentences: number; readonly tokens: number; readonly dependencies: number };
}

/** The Tags of a batch of documents, by Tag id, each once (a Tag's value is its id's lemma, the same in every document). */
export function batchTags(documents: readonly TokenGraphDocument[]): Map<string, string> {
  const tags = new Map<string, string>();
  for (const document of documents) for (const [id, value] of document.tags) if (!tags.has(id)) tags.set(id, value);
  return tags;
}

/**
 * Checks an annotation (loom's CoreNLP-shaped JSON) and turns it into the rows of the token graph. `field` names the
 * annotation in errors (`body._annotation`); a ValidationError names the first bad field by JSON path. The document id
 * is the annotation's `docId`, else a hash of its content, so the same text always gets the same node.
 */
export function tokenGraphDocument(value: unknown, field: string): TokenGraphDocument {
  const annotation = checkAnnotation(value, field);
  const canonical = JSON.stringify(annotation.sentences);
  const hash = createHash('sha256').update(canonical).digest('hex');
  const id = annotation.docId ?? `annotation-${hash.slice(0, 32)}`;
  const tags = new Map<string, string>();
  const tagLabels = new Map<string, Set<string>>();
  const sentences = annotation.sentences.map((sentence, position): SentenceRow => {
    const sentenceId = `${id}_${sentence.index}`;
    const tokens = sentenceTokens(sentence, sentenceId, tags, tagLabels);
    const dependencies = sentenceDependencies(sentence, tokens, `${field}.sentences[${position}]`);
    return { id: sentenceId, sentenceNumber: sentence.index, text: tokensText(sentence.tokens), tokens, dependencies };
  });
  const count = (rows: (sentence: SentenceRow) => readonly unknown[]): number => sentences.reduce((sum, sentence) => sum + rows(sentence).length, 0);
  return {
    id,
    hash,
    sentences,
    tags,
    tagLabels,
    counts: { sentences: sentences.length, tokens: count((sentence) => sentence.tokens), dependencies: count((sentence) => sentence.dependencies) },
  };
}

/** The token occurrences of a sentence, in its order; adds their Tags to `tags` and the entity labels of those to `tagLabels`. */
function sentenceTokens(sentence: AnnotationSentence, sentenceId: string, tags: Map<string, string>, tagLabels: Map<string, Set<string>>): TokenRow[] {
  const entities = entityMentions(sentence);
  return sentence.tokens.map((token): TokenRow => {
    const lemma = token.lemma ?? token.word;
    const tag = `${lemma}_${TAG_LANGUAGE}`;
    tags.set(tag, lemma);
    const properties: Record<string, string | number | boolean> = {
      id: `${sentenceId}_${token.index}`,
      tokenIndex: token.index,
      startPosition: token.characterOffsetBegin,
      endPosition: token.characterOffsetEnd,
      value: token.word,
      lemma,
    };
    if (token.pos !== undefined) properties['pos'] = token.pos;
    if (token.upos !== undefined) properties['upos'] = token.upos;
    const entity = entities.get(token.index);
    if (entity !== undefined) {
      Object.assign(properties, {
        ne: entity.ner,
        entityId: `${sentenceId}_e${entity.number}`,
        entityStart: entity.start,
        entityEnd: entity.end,
        entityValue: entity.text,
      });
      const label = `NE_${entity.ner.charAt(0)}${entity.ner.slice(1).toLowerCase()}`;
      // entity types come from the annotation: only identifiers become labels
      if (ENTITY_LABEL.test(label)) tagLabels.set(tag, (tagLabels.get(tag) ?? new Set()).add(label));
    }
    return { tag, properties };
  });
}

/** The dependencies of a sentence between its `tokens` (marking the root's `isRoot`); a ValidationError names a bad one below `path`. */
function sentenceDependencies(sentence: AnnotationSentence, tokens: readonly TokenRow[], path: string): DependencyRow[] {
  const positions = new Map(sentence.tokens.map((token, p) => [token.index, p]));
  return (sentence.basicDependencies ?? []).map((dependency, d): DependencyRow => {
    const at = `${path}.basicDependencies[${d}]`;
    const isRoot = dependency.dep === ROOT_RELATION || dependency.governor === 0;
    const match = DEPENDENCY.exec(dependency.dep);
    if (!isRoot && match === null) throw ValidationError.of(`${at}.dep`, 'must be a dependency relation such as nsubj or obl:tmod', 'INVALID_VALUE');
    const governor = positions.get(isRoot ? dependency.dependent : dependency.governor);
    const dependent = positions.get(dependency.dependent);
    if (governor === undefined || dependent === undefined) throw ValidationError.of(at, 'names a token index that is not in its sentence', 'INVALID_VALUE');
    if (isRoot) tokens[dependent]!.properties['isRoot'] = true;
    return {
      type: isRoot ? ROOT_RELATION : (match as RegExpExecArray)[1]!.toUpperCase(),
      from: governor,
      to: dependent,
      specific: isRoot ? null : ((match as RegExpExecArray)[2] ?? null),
    };
  });
}

/** The text of consecutive tokens (a sentence, an entity) as it stood in the document, with the whitespace between them. */
function tokensText(tokens: AnnotationSentence['tokens']): string {
  return tokens.map((token, i) => (i === 0 ? '' : (token.before ?? '')) + token.originalText).join('');
}

interface Mention {
  readonly number: number;
  readonly ner: string;
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/**
 * The entity mention of each token that is in one, by token index: CoreNLP's `entitymentions` where given, and runs of
 * consecutive tokens with the same `ner` for entity tokens no mention covers.
 */
function entityMentions(sentence: AnnotationSentence): Map<number, Mention> {
  const byToken = new Map<number, Mention>();
  const tokens = sentence.tokens;
  let number = 0;
  for (const mention of sentence.entitymentions ?? []) {
    const from = tokens.findIndex((token) => token.index === mention.tokenBegin + 1);
    const to = tokens.findIndex((token) => token.index === mention.tokenEnd);
    if (from < 0 || to < from) continue;
    const entry: Mention = {
      number: number++,
      ner: mention.ner,
      start: tokens[from]!.characterOffsetBegin,
      end: tokens[to]!.characterOffsetEnd,
      text: mention.text,
    };
    for (let i = from; i <= to; i++) byToken.set(tokens[i]!.index, entry);
  }
  for (let i = 0; i < tokens.length;) {
    const ner = tokens[i]!.ner;
    if (ner === undefined || ner === NO_ENTITY || byToken.has(tokens[i]!.index)) {
      i++;
      continue;
    }
    let j = i;
    while (j + 1 < tokens.length && tokens[j + 1]!.ner === ner && !byToken.has(tokens[j + 1]!.index)) j++;
    const entry: Mention = {
      number: number++,
      ner,
      start: tokens[i]!.characterOffsetBegin,
      end: tokens[j]!.characterOffsetEnd,
      text: tokensText(tokens.slice(i, j + 1)),
    };
    for (let k = i; k <= j; k++) byToken.set(tokens[k]!.index, entry);
    i = j + 1;
  }
  return byToken;
}

/** The annotation, checked with the complete annotation schema; a ValidationError names the first bad field below `field`. */
function checkAnnotation(value: unknown, field: string): CheckedAnnotation {
  if (value === undefined) throw ValidationError.of(field, 'is missing: the message has no annotation (the v2 output of entity extraction)', 'MISSING_FIELD');
  return parseWithSchema(COMPLETE_ANNOTATION_SCHEMA, value, field);
}
