import { ValidationError } from '@loom/domain';
import type { GraphBulkCreate, GraphNodeBatch, GraphParameters, GraphProperties, GraphPropertyValue, GraphRelationshipBatch } from './graph-store.js';
import { checkIdentifier } from './parameters.js';

/** A bulk write checked and trimmed: empty batches dropped, shared nodes listed once, each batch's property names known. */
export interface CheckedBulkCreate {
  readonly nodes: readonly CheckedNodeBatch[];
  readonly relationships: readonly CheckedRelationshipBatch[];
}

/** A node batch with the property names its nodes have (declared, or else found in them, sorted). */
export interface CheckedNodeBatch extends GraphNodeBatch {
  readonly properties: readonly string[];
}

/** A relationship batch with the property names its relationships have, sorted. */
export interface CheckedRelationshipBatch extends GraphRelationshipBatch {
  readonly properties: readonly string[];
}

/** One statement of a bulk write on Neo4j: Cypher text that depends only on labels, keys and property names, and its parameters. */
export interface Neo4jBulkStatement {
  readonly text: string;
  readonly parameters: GraphParameters;
}

/**
 * Checks the names a bulk write puts into statement text (labels, types, key and property names: identifiers) and
 * the key values of shared nodes, naming the field of the first bad one (`nodes[0].label`); drops empty batches and
 * keeps the first node of each key value of a `skipExisting` batch.
 */
export function checkBulkCreate(write: GraphBulkCreate): CheckedBulkCreate {
  const nodes = (write.nodes ?? []).map((batch, i): CheckedNodeBatch => {
    checkIdentifier(batch.label, `nodes[${i}].label`);
    const key = batch.skipExisting;
    const properties = nodeProperties(batch, `nodes[${i}]`);
    if (key === undefined) return { ...batch, properties };
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
    return { ...batch, nodes: [...byKey.values()], properties };
  });
  const relationships = (write.relationships ?? []).map((batch, i): CheckedRelationshipBatch => {
    checkIdentifier(batch.type, `relationships[${i}].type`);
    for (const end of ['from', 'to'] as const) {
      checkIdentifier(batch[end].label, `relationships[${i}].${end}.label`);
      checkIdentifier(batch[end].property, `relationships[${i}].${end}.property`);
    }
    const properties = foundProperties(
      batch.relationships.map((row) => row.properties ?? {}),
      (row, name) => `relationships[${i}].relationships[${row}].properties.${name}`,
    );
    return { ...batch, properties };
  });
  return { nodes: nodes.filter((batch) => batch.nodes.length > 0), relationships: relationships.filter((batch) => batch.relationships.length > 0) };
}

/** The property names of a node batch: those it declares (every node's checked against them), else those its nodes have, sorted. */
function nodeProperties(batch: GraphNodeBatch, field: string): string[] {
  if (batch.properties !== undefined) {
    batch.properties.forEach((name, p) => checkIdentifier(name, `${field}.properties[${p}]`));
    const declared = new Set(batch.properties);
    batch.nodes.forEach((node, n) => {
      for (const name in node)
        if (!declared.has(name)) throw ValidationError.of(`${field}.nodes[${n}].${name}`, "is not one of the batch's declared properties", 'INVALID_VALUE');
    });
    return [...batch.properties];
  }
  return foundProperties(batch.nodes, (row, name) => `${field}.nodes[${row}].${name}`);
}

/** The property names the rows have, sorted, each checked as an identifier; a bad one is named by its first row (`fieldOf`). */
function foundProperties(rows: readonly GraphProperties[], fieldOf: (row: number, name: string) => string): string[] {
  const names = new Set<string>();
  for (const row of rows) for (const name in row) names.add(name);
  const properties = [...names].sort();
  properties.forEach((name) =>
    checkIdentifier(
      name,
      fieldOf(
        rows.findIndex((row) => name in row),
        name,
      ),
    ),
  );
  return properties;
}

/**
 * The Cypher statements of a checked bulk write on Neo4j, in order: one per node batch, then one per pair of end
 * labels and keys, whatever types its relationships have (the type is a dynamic `$(…)` type, Neo4j 5.26 or later).
 * Each names its properties in the text (a CREATE with a literal map plans without an Eager operator, `SET n = map`
 * does not) and takes its rows as lists, positionally, in one map parameter `$input`: Neo4j keys its plan cache on the
 * sizes of top-level list parameters, not of lists inside a map, so a text is planned once, whatever the batch's size.
 */
export function neo4jBulkStatements(write: CheckedBulkCreate): Neo4jBulkStatement[] {
  const nodes = write.nodes.map((batch): Neo4jBulkStatement => {
    const label = quoted(batch.label);
    const key = batch.skipExisting;
    const rows = batch.nodes.map((node) => batch.properties.map((name) => propertyValue(node[name])));
    if (key === undefined) return { text: `UNWIND $input.rows AS row CREATE (n:${label} ${literalMap(batch.properties, 0)})`, parameters: { input: { rows } } };
    const keyIndex = batch.properties.indexOf(key);
    const others = batch.properties.flatMap((name, p) => (name === key ? [] : [`n.${quoted(name)} = row[${p}]`]));
    const onCreate = others.length === 0 ? '' : ` ON CREATE SET ${others.join(', ')}`;
    return { text: `UNWIND $input.rows AS row MERGE (n:${label} {${quoted(key)}: row[${keyIndex}]})${onCreate}`, parameters: { input: { rows } } };
  });
  const byEnds = new Map<string, CheckedRelationshipBatch[]>();
  for (const batch of write.relationships) {
    const ends = `${batch.from.label}.${batch.from.property}>${batch.to.label}.${batch.to.property}`;
    byEnds.set(ends, [...(byEnds.get(ends) ?? []), batch]);
  }
  const relationships = [...byEnds.values()].map((batches): Neo4jBulkStatement => {
    const { from, to } = batches[0]!;
    const properties = [...new Set(batches.flatMap((batch) => batch.properties))].sort();
    const rows = batches.flatMap((batch) =>
      batch.relationships.map((row) => [row.from, row.to, batch.type, ...properties.map((name) => propertyValue(row.properties?.[name]))]),
    );
    const map = properties.length === 0 ? '' : ` ${literalMap(properties, 3)}`;
    return {
      text:
        `UNWIND $input.rows AS row MATCH (a:${quoted(from.label)} {${quoted(from.property)}: row[0]}) ` +
        `MATCH (b:${quoted(to.label)} {${quoted(to.property)}: row[1]}) CREATE (a)-[:$(row[2])${map}]->(b)`,
      parameters: { input: { rows } },
    };
  });
  return [...nodes, ...relationships];
}

/** `{`a`: row[offset], `b`: row[offset + 1], …}`: a null value leaves its property out, as CREATE does. */
function literalMap(names: readonly string[], offset: number): string {
  return `{${names.map((name, p) => `${quoted(name)}: row[${offset + p}]`).join(', ')}}`;
}

function quoted(identifier: string): string {
  return `\`${identifier}\``;
}

function propertyValue(value: GraphPropertyValue | undefined): GraphPropertyValue {
  return value ?? null;
}
