import { ValidationError } from '@loom/domain';
import type { GraphBulkCreate, GraphNodeBatch, GraphParameters, GraphProperties, GraphRelationshipBatch } from './graph-store.js';
import { checkIdentifier } from './parameters.js';

/** A bulk write checked and trimmed: empty batches dropped, shared nodes listed once. */
export interface CheckedBulkCreate {
  readonly nodes: readonly GraphNodeBatch[];
  readonly relationships: readonly GraphRelationshipBatch[];
}

/** One statement of a bulk write on Neo4j: Cypher text that depends only on labels and types, and its parameters. */
export interface Neo4jBulkStatement {
  readonly text: string;
  readonly parameters: GraphParameters;
}

/**
 * Checks the names a bulk write puts into statement text (labels, types, key properties: identifiers) and the key
 * values of shared nodes, naming the field of the first bad one (`nodes[0].label`); drops empty batches and keeps the
 * first node of each key value of a `skipExisting` batch.
 */
export function checkBulkCreate(write: GraphBulkCreate): CheckedBulkCreate {
  const nodes = (write.nodes ?? []).map((batch, i) => {
    checkIdentifier(batch.label, `nodes[${i}].label`);
    const key = batch.skipExisting;
    if (key === undefined) return batch;
    checkIdentifier(key, `nodes[${i}].skipExisting`);
    const byKey = new Map<string, GraphProperties>();
    batch.nodes.forEach((node, n) => {
      const value = node[key];
      if (typeof value !== 'string' && typeof value !== 'number') {
        throw ValidationError.of(`nodes[${i}].nodes[${n}].${key}`, 'must be a string or number: it is the key that skipExisting finds stored nodes by');
      }
      const identity = `${typeof value}:${value}`;
      if (!byKey.has(identity)) byKey.set(identity, node);
    });
    return { ...batch, nodes: [...byKey.values()] };
  });
  (write.relationships ?? []).forEach((batch, i) => {
    checkIdentifier(batch.type, `relationships[${i}].type`);
    for (const end of ['from', 'to'] as const) {
      checkIdentifier(batch[end].label, `relationships[${i}].${end}.label`);
      checkIdentifier(batch[end].property, `relationships[${i}].${end}.property`);
    }
  });
  return {
    nodes: nodes.filter((batch) => batch.nodes.length > 0),
    relationships: (write.relationships ?? []).filter((batch) => batch.relationships.length > 0),
  };
}

/**
 * The Cypher statements of a checked bulk write on Neo4j: one per batch, in order. Their text names only labels,
 * types and keys, so the server plans each once and reuses the plan for every later batch of the same shape.
 */
export function neo4jBulkStatements(write: CheckedBulkCreate): Neo4jBulkStatement[] {
  const nodes = write.nodes.map((batch): Neo4jBulkStatement => {
    const label = `\`${batch.label}\``;
    const text =
      batch.skipExisting === undefined
        ? `UNWIND $nodes AS properties CREATE (n:${label}) SET n = properties`
        : `UNWIND $nodes AS properties MERGE (n:${label} {\`${batch.skipExisting}\`: properties.\`${batch.skipExisting}\`}) ON CREATE SET n = properties`;
    return { text, parameters: { nodes: batch.nodes } };
  });
  const relationships = write.relationships.map((batch): Neo4jBulkStatement => ({
    text:
      `UNWIND $relationships AS r MATCH (a:\`${batch.from.label}\` {\`${batch.from.property}\`: r.from}) ` +
      `MATCH (b:\`${batch.to.label}\` {\`${batch.to.property}\`: r.to}) CREATE (a)-[x:\`${batch.type}\`]->(b) SET x = r.properties`,
    parameters: { relationships: batch.relationships.map((row) => ({ from: row.from, to: row.to, properties: row.properties ?? {} })) },
  }));
  return [...nodes, ...relationships];
}
