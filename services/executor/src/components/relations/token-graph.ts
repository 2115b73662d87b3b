import { createHash } from 'node:crypto';
import { type CheckedAnnotation, COMPLETE_ANNOTATION_SCHEMA, NO_ENTITY, parseWithSchema, ROOT_RELATION, ValidationError } from '@loom/domain';
import { type GraphPropertyIndex, type GraphStore, type GraphTransaction } from '@loom/graph';

// The token graph of GraphAware neo4j-nlp, written from loom's annotation JSON:
//   (:AnnotatedText {id, hash})-[:CONTAINS_SENTENCE]->(:Sentence {id, sentenceNumber, text})
//   (:AnnotatedText)-[:FIRST_SENTENCE]->(:Sentence)-[:NEXT_SENTENCE]->(:Sentence)
//   (:Sentence)-[:SENTENCE_TAG_OCCURRENCE]->(:TagOccurrence {id, tokenIndex, startPosition, endPosition, value, lemma, pos, upos,
//     ne, entityId, entityStart, entityEnd, entityValue, isRoot}), the properties a token lacks left out
//   (:TagOccurrence)-[:TAG_OCCURRENCE_TAG]->(:Tag {id, value})
//   (governor:TagOccurrence)-[:NSUBJ {specific}]->(dependent:TagOccurrence), one per dependency; the root has a
//   ROOT relationship to itself and `isRoot: true`.
// A batch of documents is written in a fixed number of statements, whatever its size and whichever dependency types
// and entity types it has: the nodes and relationships through the graph store's bulk create (on Neo4j one statement
// per label and one per pair of end labels, the same texts for every batch; one on AGE). AGE gives a vertex
// exactly one label, so the labels neo4j-nlp adds besides (`NE_Person` on a Tag, `Root` on the root occurrence) are
// written by two more statements on Neo4j only; the same facts are properties (`ne`, `isRoot`) on both.

/** The node properties loom's statements look nodes up by; ensured once per store. */
export const TOKEN_GRAPH_INDEXES: readonly GraphPropertyIndex[] = [
  { label: 'AnnotatedText', property: 'id' },
  { label: 'Sentence', property: 'id' },
  { label: 'TagOccurrence', property: 'id' },
  { label: 'Tag', property: 'id' },
];

/** Every property a TagOccurrence may have, declared so that its statement is the same for every batch. */
const TOKEN_PROPERTIES = [
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

type AnnotationSentence = CheckedAnnotation['sentences'][number];

interface SentenceRow {
  readonly doc: string;
  readonly id: string;
  readonly sentenceNumber: number;
  readonly text: string;
}

interface TokenRow {
  readonly sentence: string;
  readonly tag: string;
  readonly properties: Record<string, string | number | boolean>;
}

interface DependencyRow {
  readonly from: string;
  readonly to: string;
  readonly specific: string | null;
}

/** One document ready to be written: its id, content hash and the rows of each statement. */
export interface TokenGraphDocument {
  readonly id: string;
  readonly hash: string;
  readonly sentences: readonly SentenceRow[];
  readonly tokens: readonly TokenRow[];
  readonly tags: ReadonlyMap<string, string>;
  /** Dependencies by relationship type (upper case), governor to dependent. */
  readonly dependencies: ReadonlyMap<string, readonly DependencyRow[]>;
  /** Tag ids by named-entity label (`NE_Person`), for the Neo4j-only labels. */
  readonly entityTags: ReadonlyMap<string, readonly string[]>;
  readonly counts: { readonly sentences: number; readonly tokens: number; readonly dependencies: number };
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
  const sentences: SentenceRow[] = [];
  const tokens: TokenRow[] = [];
  const tags = new Map<string, string>();
  const dependencies = new Map<string, DependencyRow[]>();
  const entityTags = new Map<string, string[]>();
  let dependencyCount = 0;

  annotation.sentences.forEach((sentence, position) => {
    const sentencePath = `${field}.sentences[${position}]`;
    const sentenceId = `${id}_${sentence.index}`;
    sentences.push({ doc: id, id: sentenceId, sentenceNumber: sentence.index, text: tokensText(sentence.tokens) });
    const tokenId = (index: number): string => `${sentenceId}_${index}`;
    const entities = entityMentions(sentence);
    const indexes = new Set(sentence.tokens.map((token) => token.index));
    for (const token of sentence.tokens) {
      const lemma = token.lemma ?? token.word;
      const tag = `${lemma}_${TAG_LANGUAGE}`;
      tags.set(tag, lemma);
      const properties: Record<string, string | number | boolean> = {
        id: tokenId(token.index),
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
        entityTags.set(label, [...(entityTags.get(label) ?? []), tag]);
      }
      tokens.push({ sentence: sentenceId, tag, properties });
    }
    (sentence.basicDependencies ?? []).forEach((dependency, d) => {
      const path = `${sentencePath}.basicDependencies[${d}]`;
      const isRoot = dependency.dep === ROOT_RELATION || dependency.governor === 0;
      const match = DEPENDENCY.exec(dependency.dep);
      if (!isRoot && match === null) throw ValidationError.of(`${path}.dep`, 'must be a dependency relation such as nsubj or obl:tmod', 'INVALID_VALUE');
      if (!indexes.has(dependency.dependent) || (!isRoot && !indexes.has(dependency.governor))) {
        throw ValidationError.of(path, 'names a token index that is not in its sentence', 'INVALID_VALUE');
      }
      const type = isRoot ? ROOT_RELATION : (match as RegExpExecArray)[1]!.toUpperCase();
      const governor = isRoot ? dependency.dependent : dependency.governor;
      const row: DependencyRow = {
        from: tokenId(governor),
        to: tokenId(dependency.dependent),
        specific: isRoot ? null : ((match as RegExpExecArray)[2] ?? null),
      };
      dependencies.set(type, [...(dependencies.get(type) ?? []), row]);
      if (isRoot) {
        const root = tokens.find((token) => token.properties['id'] === row.to);
        if (root !== undefined) root.properties['isRoot'] = true;
      }
      dependencyCount++;
    });
  });
  return {
    id,
    hash,
    sentences,
    tokens,
    tags,
    dependencies,
    entityTags,
    counts: { sentences: sentences.length, tokens: tokens.length, dependencies: dependencyCount },
  };
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

/** What writing some documents did: the documents written, and those already present with the same content. */
export interface TokenGraphWrite {
  readonly written: readonly string[];
  readonly unchanged: readonly string[];
}

/**
 * Writes documents into the token graph in one transaction, a handful of batched statements for all of them. A
 * document already stored with the same content hash is left as it is (writing again changes nothing); one stored
 * with other content is replaced. Tags are shared by all documents and never removed.
 */
export async function writeTokenGraph(store: GraphStore, documents: readonly TokenGraphDocument[], signal?: AbortSignal): Promise<TokenGraphWrite> {
  // the last of several messages with the same document wins, as if they had been written one after the other
  const byId = new Map(documents.map((document) => [document.id, document]));
  return store.writeTransaction(async (tx) => {
    const options = signal === undefined ? {} : { signal };
    // lists inside the one map parameter: Neo4j plans a statement again for each size bucket of a top-level list
    const stored = await tx.run(
      'UNWIND $input.ids AS wanted MATCH (d:AnnotatedText) WHERE d.id = wanted RETURN d.id AS doc, d.hash AS hash',
      { input: { ids: [...byId.keys()] } },
      options,
    );
    const storedHash = new Map(stored.map((record) => [record['doc'], record['hash']]));
    const unchanged = [...byId.values()].filter((document) => storedHash.get(document.id) === document.hash).map((document) => document.id);
    const changed = [...byId.values()].filter((document) => storedHash.has(document.id) && storedHash.get(document.id) !== document.hash);
    const fresh = [...byId.values()].filter((document) => storedHash.get(document.id) !== document.hash);
    if (changed.length > 0)
      await removeDocuments(
        tx,
        changed.map((document) => document.id),
        options,
      );
    if (fresh.length > 0) await createDocuments(tx, store.kind, fresh, options);
    return { written: fresh.map((document) => document.id), unchanged };
  });
}

async function removeDocuments(tx: GraphTransaction, ids: readonly string[], options: { signal?: AbortSignal }): Promise<void> {
  const scope = 'UNWIND $input.ids AS wanted MATCH (d:AnnotatedText)-[:CONTAINS_SENTENCE]->(s:Sentence)';
  const input = { input: { ids } };
  await tx.run(`${scope}-[:SENTENCE_TAG_OCCURRENCE]->(t:TagOccurrence) WHERE d.id = wanted DETACH DELETE t`, input, options);
  await tx.run(`${scope} WHERE d.id = wanted DETACH DELETE s`, input, options);
  await tx.run('UNWIND $input.ids AS wanted MATCH (d:AnnotatedText) WHERE d.id = wanted DETACH DELETE d', input, options);
}

async function createDocuments(
  tx: GraphTransaction,
  kind: GraphStore['kind'],
  documents: readonly TokenGraphDocument[],
  options: { signal?: AbortSignal },
): Promise<void> {
  const sentences = documents.flatMap((document) => document.sentences);
  const tags = new Map<string, string>();
  for (const document of documents) for (const [id, value] of document.tags) tags.set(id, value);
  const byType = new Map<string, DependencyRow[]>();
  for (const document of documents) for (const [type, rows] of document.dependencies) byType.set(type, [...(byType.get(type) ?? []), ...rows]);
  const key = (label: string): GraphPropertyIndex => ({ label, property: 'id' });
  await tx.createInBulk(
    {
      nodes: [
        { label: 'AnnotatedText', nodes: documents.map((document) => ({ id: document.id, hash: document.hash })) },
        { label: 'Sentence', nodes: sentences.map((sentence) => ({ id: sentence.id, sentenceNumber: sentence.sentenceNumber, text: sentence.text })) },
        // tags are shared between documents: only the missing ones are created
        { label: 'Tag', nodes: [...tags].map(([id, value]) => ({ id, value })), skipExisting: 'id' },
        { label: 'TagOccurrence', nodes: documents.flatMap((document) => document.tokens.map((token) => token.properties)), properties: TOKEN_PROPERTIES },
      ],
      relationships: [
        { type: 'CONTAINS_SENTENCE', from: key('AnnotatedText'), to: key('Sentence'), relationships: sentences.map((s) => ({ from: s.doc, to: s.id })) },
        {
          type: 'FIRST_SENTENCE',
          from: key('AnnotatedText'),
          to: key('Sentence'),
          relationships: documents.flatMap((document) => (document.sentences[0] === undefined ? [] : [{ from: document.id, to: document.sentences[0].id }])),
        },
        {
          type: 'NEXT_SENTENCE',
          from: key('Sentence'),
          to: key('Sentence'),
          relationships: documents.flatMap((document) =>
            document.sentences.slice(1).map((sentence, i) => ({ from: document.sentences[i]!.id, to: sentence.id })),
          ),
        },
        {
          type: 'SENTENCE_TAG_OCCURRENCE',
          from: key('Sentence'),
          to: key('TagOccurrence'),
          relationships: documents.flatMap((document) => document.tokens.map((token) => ({ from: token.sentence, to: token.properties['id'] as string }))),
        },
        {
          type: 'TAG_OCCURRENCE_TAG',
          from: key('TagOccurrence'),
          to: key('Tag'),
          relationships: documents.flatMap((document) => document.tokens.map((token) => ({ from: token.properties['id'] as string, to: token.tag }))),
        },
        // one batch per dependency type: a relationship type is part of the statement, never a parameter
        ...[...byType.keys()].sort().map((type) => ({
          type,
          from: key('TagOccurrence'),
          to: key('TagOccurrence'),
          relationships: byType.get(type)!.map((row) => ({ from: row.from, to: row.to, properties: { specific: row.specific } })),
        })),
      ],
    },
    options,
  );
  if (kind === 'neo4j') await addNeo4jLabels(tx, documents, options);
}

/** The labels neo4j-nlp adds besides the one each node has: Neo4j only (an AGE vertex has exactly one label). */
async function addNeo4jLabels(tx: GraphTransaction, documents: readonly TokenGraphDocument[], options: { signal?: AbortSignal }): Promise<void> {
  const tagLabels = new Map<string, [tag: string, label: string]>();
  for (const document of documents) {
    for (const [label, tags] of document.entityTags) {
      // entity types come from the annotation: only identifiers become labels
      if (/^NE_[A-Za-z0-9_]+$/.test(label)) for (const tag of tags) tagLabels.set(`${tag} ${label}`, [tag, label]);
    }
  }
  const roots = documents.flatMap((document) => document.tokens.filter((token) => token.properties['isRoot'] === true).map((token) => token.properties['id']));
  // one statement for every entity type (a dynamic label), sent with the other before either answer is awaited
  await Promise.all([
    tx.run('UNWIND $input.rows AS row MATCH (g:Tag {id: row[0]}) SET g:$(row[1])', { input: { rows: [...tagLabels.values()] } }, options),
    tx.run('UNWIND $input.ids AS id MATCH (t:TagOccurrence {id: id}) SET t:Root', { input: { ids: roots } }, options),
  ]);
}
