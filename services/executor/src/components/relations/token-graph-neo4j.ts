import { type GraphTransaction } from '@loom/graph';
import { batchTags, TOKEN_PROPERTIES, type TokenGraphDocument } from './token-graph-document.js';

// On Neo4j the token graph of a batch is two statements of fixed text, sent together (one round trip), whatever the
// batch's size, dependency types and entity types:
//   1. the batch's Tags, merged on their indexed id, with their entity labels (`NE_Person`);
//   2. every document with its sentences, each sentence with its token occurrences, created with their relationships
//      to the sentence (bound in the statement) and to their Tag (one index seek), then the dependencies between the
//      sentence's occurrences, found by position in the list the statement collected (no index seek), and the
//      sentence chain from the document's sentences in their order.
// A relationship statement of its own finds both its ends by index for every row: this way a token costs one index
// seek instead of six, and the planner has two statements to plan instead of twelve. Rows are lists, positional,
// inside the one map parameter `$input` (Neo4j plans a statement again for each size bucket of a top-level list).
// Neither statement plans an Eager operator (checked with EXPLAIN): labels and relationship types in the text are
// static except the dynamic ones read from parameters, which Neo4j takes for any label; the `a:TagOccurrence` test on
// the ends of a dependency tells the planner those are no Sentence or AnnotatedText created later in the statement.

/** The position of `isRoot` in a token's row: the row is its Tag id, then TOKEN_PROPERTIES in order. */
const IS_ROOT = 1 + TOKEN_PROPERTIES.indexOf('isRoot');

/** A token's properties named in the text: a null in the row leaves the property out, as CREATE does. */
const TOKEN_MAP = `{${TOKEN_PROPERTIES.map((name, p) => `${name}: token[${p + 1}]`).join(', ')}}`;

/** Rows `[id, value, labels]`: a Tag is created once, and gets the entity labels of every batch that has it as an entity. */
const TAGS = 'UNWIND $input.tags AS tag MERGE (g:Tag {id: tag[0]}) ON CREATE SET g.value = tag[1], g:$(tag[2]) ON MATCH SET g:$(tag[2])';

/**
 * Rows `[id, hash, sentences]`, a sentence `[id, sentenceNumber, text, tokens, dependencies]`, a token `[tag id,
 * ...TOKEN_PROPERTIES]`, a dependency `[governor position, dependent position, type, specific]`. Neo4j passes the rows
 * of an UNWIND in order through these operators and collect() keeps that order, so `occurrences` and `sentences` are
 * in the annotation's order (an ORDER BY to insist on it would make the planner add an Eager).
 */
const DOCUMENTS =
  'UNWIND $input.documents AS document CREATE (d:AnnotatedText {id: document[0], hash: document[1]}) ' +
  'WITH d, document UNWIND document[2] AS sentence ' +
  'CREATE (d)-[:CONTAINS_SENTENCE]->(s:Sentence {id: sentence[0], sentenceNumber: sentence[1], text: sentence[2]}) ' +
  'WITH d, s, sentence CALL (s, sentence) { ' +
  'UNWIND sentence[3] AS token MATCH (g:Tag {id: token[0]}) ' +
  `CREATE (s)-[:SENTENCE_TAG_OCCURRENCE]->(t:TagOccurrence ${TOKEN_MAP})-[:TAG_OCCURRENCE_TAG]->(g) ` +
  `FOREACH (root IN CASE WHEN token[${IS_ROOT}] THEN [1] ELSE [] END | SET t:Root) ` +
  'WITH sentence, collect(t) AS occurrences UNWIND sentence[4] AS dependency ' +
  'WITH occurrences[dependency[0]] AS a, occurrences[dependency[1]] AS b, dependency WHERE a:TagOccurrence AND b:TagOccurrence ' +
  'CREATE (a)-[:$(dependency[2]) {specific: dependency[3]}]->(b) } ' +
  'WITH d, collect(s) AS sentences WITH d, sentences, sentences[0] AS first CREATE (d)-[:FIRST_SENTENCE]->(first) ' +
  'WITH sentences UNWIND range(1, size(sentences) - 1) AS i WITH sentences[i - 1] AS previous, sentences[i] AS next ' +
  'CREATE (previous)-[:NEXT_SENTENCE]->(next)';

/** The statements' texts, for tests that check they stay fixed. */
export const NEO4J_TOKEN_GRAPH_STATEMENTS: readonly string[] = [TAGS, DOCUMENTS];

/**
 * Creates the token graph of documents not stored yet, with the labels neo4j-nlp adds on Neo4j (`NE_<type>` on a
 * Tag, `Root` on the root occurrence): two statements, sent before either answer is awaited.
 */
export async function createTokenGraphOnNeo4j(
  tx: GraphTransaction,
  documents: readonly TokenGraphDocument[],
  options: { signal?: AbortSignal },
): Promise<void> {
  const tags = new Map([...batchTags(documents)].map(([id, value]) => [id, [id, value, new Set<string>()] as const]));
  for (const document of documents) for (const [id, labels] of document.tagLabels) for (const label of labels) tags.get(id)?.[2].add(label);
  const documentRows = documents.map((document) => [
    document.id,
    document.hash,
    document.sentences.map((sentence) => [
      sentence.id,
      sentence.sentenceNumber,
      sentence.text,
      sentence.tokens.map((token) => [token.tag, ...TOKEN_PROPERTIES.map((name) => token.properties[name] ?? null)]),
      sentence.dependencies.map((dependency) => [dependency.from, dependency.to, dependency.type, dependency.specific]),
    ]),
  ]);
  const tagRows = [...tags.values()].map(([id, value, labels]) => [id, value, [...labels].sort()]);
  // sent together: the driver pipelines them on the transaction's connection and the server runs them in order
  await Promise.all([tx.run(TAGS, { input: { tags: tagRows } }, options), tx.run(DOCUMENTS, { input: { documents: documentRows } }, options)]);
}
