import type { CheckedBulkCreate } from './bulk-create.js';
import type { GraphNodeBatch, GraphRelationshipBatch } from './graph-store.js';

/** A label table a bulk write needs: `vertex` for a node label, `edge` for a relationship type. */
export interface AgeLabel {
  readonly name: string;
  readonly kind: 'vertex' | 'edge';
}

/** One SQL statement of a bulk write on AGE: its text and its one parameter, the rows as JSON. */
export interface AgeBulkStatement {
  readonly text: string;
  readonly values: [string];
}

/**
 * The expression by which a vertex's property is looked up: `WHERE n.p = v` in Cypher compiles to it, and the index
 * ensurePropertyIndexes creates is on it, so SQL written with it is served by that index too.
 */
export function agePropertyKey(property: string, alias?: string): string {
  const properties = alias === undefined ? 'properties' : `${alias}.properties`;
  return `ag_catalog.agtype_access_operator(VARIADIC ARRAY[${properties}, '"${property}"'::ag_catalog.agtype])`;
}

/** A JSON value (a jsonb expression) as agtype, which parses JSON text. */
function agtypeOf(json: string): string {
  return `ag_catalog.agtype_in((${json})::text::cstring)`;
}

/** The label tables a checked bulk write inserts into. */
export function ageBulkLabels(write: CheckedBulkCreate): AgeLabel[] {
  const labels = new Map<string, AgeLabel>();
  for (const batch of write.nodes) labels.set(`vertex:${batch.label}`, { name: batch.label, kind: 'vertex' });
  for (const batch of write.relationships) labels.set(`edge:${batch.type}`, { name: batch.type, kind: 'edge' });
  return [...labels.values()];
}

/** The graph id of the node of `label` whose `property` equals the JSON value `json`, looked up through its index. */
function nodeId(graph: string, label: string, property: string, json: string): string {
  // a scalar subquery runs once per row, an index probe: as a join, the planner (which takes a JSON array for 100 rows)
  // would rather hash the label's whole table, which costs more the bigger the graph
  return `(SELECT node.id FROM "${graph}"."${label}" AS node WHERE ${agePropertyKey(property, 'node')} = ${agtypeOf(json)} LIMIT 1)`;
}

/**
 * The INSERT of one node batch into its label table (whose defaults give each row its graph id), properties from the
 * JSON rows with nulls left out as AGE's CREATE leaves them out; a `skipExisting` batch inserts only the rows whose
 * key no stored node has. `graph` and every name are checked identifiers.
 */
export function ageNodeInsert(graph: string, batch: GraphNodeBatch): AgeBulkStatement {
  const key = batch.skipExisting;
  const unlessStored = key === undefined ? '' : ` WHERE ${nodeId(graph, batch.label, key, `row.value -> '${key}'`)} IS NULL`;
  return {
    text: `INSERT INTO "${graph}"."${batch.label}" (properties) SELECT ${agtypeOf('jsonb_strip_nulls(row.value)')} FROM jsonb_array_elements($1::jsonb) AS row${unlessStored}`,
    values: [JSON.stringify(batch.nodes)],
  };
}

/**
 * One statement inserting every relationship batch into its label table, a data-modifying WITH query per batch;
 * start and end ids are found by key through the property indexes (a key should name one node: of several, one is
 * taken). Nodes written by earlier statements of the same transaction are found; a row whose node is not found
 * inserts nothing.
 */
export function ageRelationshipInsert(graph: string, batches: readonly GraphRelationshipBatch[]): AgeBulkStatement {
  const queries = batches.map((batch, i) => {
    const ends =
      `SELECT ${nodeId(graph, batch.from.label, batch.from.property, "row.value -> 'from'")} AS start_id, ` +
      `${nodeId(graph, batch.to.label, batch.to.property, "row.value -> 'to'")} AS end_id, ` +
      `${agtypeOf("jsonb_strip_nulls(row.value -> 'properties')")} AS properties FROM jsonb_array_elements($1::jsonb -> ${i}) AS row OFFSET 0`;
    // OFFSET 0 keeps the lookups in the subquery: pulled up, each would run again for the IS NOT NULL test
    return (
      `r${i} AS (INSERT INTO "${graph}"."${batch.type}" (start_id, end_id, properties) ` +
      `SELECT start_id, end_id, properties FROM (${ends}) AS found WHERE start_id IS NOT NULL AND end_id IS NOT NULL RETURNING 1)`
    );
  });
  const rows = batches.map((batch) => batch.relationships.map((row) => ({ from: row.from, to: row.to, properties: row.properties ?? {} })));
  return { text: `WITH ${queries.join(', ')} SELECT 1 AS done`, values: [JSON.stringify(rows)] };
}
