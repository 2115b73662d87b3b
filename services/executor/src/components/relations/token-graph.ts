import { type GraphPropertyIndex, type GraphRelationshipRow, type GraphStore, type GraphTransaction } from '@loom/graph';
import { batchTags, type SentenceRow, TOKEN_PROPERTIES, type TokenGraphDocument } from './token-graph-document.js';
import { createTokenGraphOnNeo4j } from './token-graph-neo4j.js';

// The token graph of GraphAware neo4j-nlp, written from loom's annotation JSON:
//   (:AnnotatedText {id, hash})-[:CONTAINS_SENTENCE]->(:Sentence {id, sentenceNumber, text})
//   (:AnnotatedText)-[:FIRST_SENTENCE]->(:Sentence)-[:NEXT_SENTENCE]->(:Sentence)
//   (:Sentence)-[:SENTENCE_TAG_OCCURRENCE]->(:TagOccurrence {id, tokenIndex, startPosition, endPosition, value, lemma, pos, upos,
//     ne, entityId, entityStart, entityEnd, entityValue, isRoot}), the properties a token lacks left out
//   (:TagOccurrence)-[:TAG_OCCURRENCE_TAG]->(:Tag {id, value})
//   (governor:TagOccurrence)-[:NSUBJ {specific}]->(dependent:TagOccurrence), one per dependency; the root has a
//   ROOT relationship to itself and `isRoot: true`.
// A batch of documents is written in a fixed number of statements, whatever its size and whichever dependency types
// and entity types it has: on AGE through the graph store's bulk create (one SQL statement on the label tables), on Neo4j in two
// statements of fixed text that create each sentence with its tokens (token-graph-neo4j.ts). AGE gives a vertex
// exactly one label, so the labels neo4j-nlp adds besides (`NE_Person` on a Tag, `Root` on the root occurrence) are
// written on Neo4j only; the same facts are properties (`ne`, `isRoot`) on both.

/** The node properties loom's statements look nodes up by; ensured once per store. */
export const TOKEN_GRAPH_INDEXES: readonly GraphPropertyIndex[] = [
  { label: 'AnnotatedText', property: 'id' },
  { label: 'Sentence', property: 'id' },
  { label: 'TagOccurrence', property: 'id' },
  { label: 'Tag', property: 'id' },
];

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
    if (fresh.length > 0) {
      if (store.kind === 'neo4j') await createTokenGraphOnNeo4j(tx, fresh, options);
      else await createDocumentsInBulk(tx, fresh, options);
    }
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

/**
 * The nodes and relationships of the documents through the graph store's bulk create (the AGE path: SQL on its label
 * tables, where every key lookup is an index probe; on Neo4j see createTokenGraphOnNeo4j).
 */
async function createDocumentsInBulk(tx: GraphTransaction, documents: readonly TokenGraphDocument[], options: { signal?: AbortSignal }): Promise<void> {
  const sentences = documents.flatMap((document) => document.sentences.map((sentence) => ({ document, sentence })));
  const tokens = sentences.flatMap(({ sentence }) => sentence.tokens.map((token) => ({ sentence, token })));
  const tags = batchTags(documents);
  const tokenId = (sentence: SentenceRow, position: number): string => sentence.tokens[position]!.properties['id'] as string;
  const byType = new Map<string, GraphRelationshipRow[]>();
  for (const { sentence } of sentences) {
    for (const row of sentence.dependencies) {
      const rows = byType.get(row.type) ?? [];
      if (rows.length === 0) byType.set(row.type, rows);
      rows.push({ from: tokenId(sentence, row.from), to: tokenId(sentence, row.to), properties: { specific: row.specific } });
    }
  }
  const key = (label: string): GraphPropertyIndex => ({ label, property: 'id' });
  await tx.createInBulk(
    {
      nodes: [
        { label: 'AnnotatedText', nodes: documents.map((document) => ({ id: document.id, hash: document.hash })) },
        { label: 'Sentence', nodes: sentences.map(({ sentence }) => ({ id: sentence.id, sentenceNumber: sentence.sentenceNumber, text: sentence.text })) },
        // tags are shared between documents: only the missing ones are created
        { label: 'Tag', nodes: [...tags].map(([id, value]) => ({ id, value })), skipExisting: 'id' },
        { label: 'TagOccurrence', nodes: tokens.map(({ token }) => token.properties), properties: TOKEN_PROPERTIES },
      ],
      relationships: [
        {
          type: 'CONTAINS_SENTENCE',
          from: key('AnnotatedText'),
          to: key('Sentence'),
          relationships: sentences.map(({ document, sentence }) => ({ from: document.id, to: sentence.id })),
        },
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
          relationships: tokens.map(({ sentence, token }) => ({ from: sentence.id, to: token.properties['id'] as string })),
        },
        {
          type: 'TAG_OCCURRENCE_TAG',
          from: key('TagOccurrence'),
          to: key('Tag'),
          relationships: tokens.map(({ token }) => ({ from: token.properties['id'] as string, to: token.tag })),
        },
        // one batch per dependency type: a relationship type is part of the statement, never a parameter
        ...[...byType.keys()].sort().map((type) => ({ type, from: key('TagOccurrence'), to: key('TagOccurrence'), relationships: byType.get(type)! })),
      ],
    },
    options,
  );
}
