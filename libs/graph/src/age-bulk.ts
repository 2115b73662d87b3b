import type { CheckedBulkCreate, CheckedNodeBatch, CheckedRelationshipBatch } from './bulk-create.js';
import type { GraphProperties, GraphPropertyIndex } from './graph-store.js';

/** A label table a bulk write needs: `vertex` for a node label, `edge` for a relationship type. */
export interface AgeLabel {
  readonly name: string;
  readonly kind: 'vertex' | 'edge';
}

/** What AGE's catalog (`ag_label`) says of a label's table: the label's id and the sequence (in the graph's schema) of its ids. */
export interface AgeLabelTable {
  /** The label id, the high 16 bits of every graph id of the label. */
  readonly id: number;
  /** The name of the sequence that numbers the label's rows (the low 48 bits of their graph ids). */
  readonly sequence: string;
}

/**
 * One SQL statement of a bulk write on AGE: its text and its parameters, each a column of rows as one text, its values
 * joined by a separator that none of them contains (the text split again by `string_to_array`, which costs far less on
 * both sides than an array literal, whose every quote in the JSON would be escaped).
 */
export interface AgeBulkStatement {
  readonly text: string;
  readonly values: string[];
}

/**
 * Joins the values of a text column: JSON (agtype text, key values), in which JSON.stringify escapes every control
 * character, so the record separator U+001E never occurs in one.
 */
const TEXT_SEPARATOR = '\u001e';
/** Stands for a missing value in a column: never a JSON text of a key or of properties (those are strings, numbers, maps). */
const NULL_TEXT = 'null';

/**
 * The expression by which a vertex's property is looked up: `WHERE n.p = v` in Cypher compiles to it, and the index
 * ensurePropertyIndexes creates is on it, so SQL written with it is served by that index too.
 */
export function agePropertyKey(property: string, alias?: string): string {
  const properties = alias === undefined ? 'properties' : `${alias}.properties`;
  return `ag_catalog.agtype_access_operator(VARIADIC ARRAY[${properties}, '"${property}"'::ag_catalog.agtype])`;
}

/** A label table's key, `vertex:Name` or `edge:NAME`: node labels and relationship types may share a name. */
export function ageLabelKey(label: AgeLabel): string {
  return `${label.kind}:${label.name}`;
}

/** The label tables a checked bulk write inserts into. */
export function ageBulkLabels(write: CheckedBulkCreate): AgeLabel[] {
  const labels = new Map<string, AgeLabel>();
  const add = (label: AgeLabel): void => void labels.set(ageLabelKey(label), label);
  for (const batch of write.nodes) add({ name: batch.label, kind: 'vertex' });
  for (const batch of write.relationships) add({ name: batch.type, kind: 'edge' });
  return [...labels.values()];
}

/**
 * A node batch of this write in which relationships find their end nodes by a key: `all` when each of its rows names
 * its node (stored already or created), `created` when only the rows it creates do (a skipExisting batch looked up by
 * another property than its key: a row it skips says nothing of the stored node's other properties).
 */
interface Candidate {
  readonly batch: number;
  readonly rows: 'all' | 'created';
}

/** Where a relationship end's key was found among this write's nodes: a node batch and a row (1-based). */
interface Found {
  readonly candidate: Candidate;
  readonly row: number;
}

/** The nodes of this write that the relationships' ends of one label and key may name, and each key's first row. */
interface EndNodes {
  readonly candidates: readonly Candidate[];
  /** By key value: Map keeps a string and a number with the same text apart, as the graph does. */
  readonly byKey: ReadonlyMap<string | number, Found>;
}

/**
 * One statement writing a whole bulk write into the label tables, a data-modifying WITH query per batch. Each node
 * batch's rows get their graph ids first (`_graphid(label id, nextval(its sequence))`, as the tables' defaults would);
 * a skipExisting batch looks its keys up through the key index, and creates only the rows not found. Relationships
 * take the ids of their ends from those batches by row number (an array subscript, not a lookup), and look up by key,
 * through the property index, only ends that are not nodes of this write (stored before: a key should name one node;
 * of several, one is taken). A row whose node is not found inserts nothing. Rows come as columns (see
 * AgeBulkStatement), properties as agtype (JSON) text with nulls left out, as AGE's CREATE leaves them out. `graph` and
 * every name are checked identifiers; `tableOf` gives the table of each label written.
 */
export function ageBulkInsert(graph: string, write: CheckedBulkCreate, tableOf: (label: AgeLabel) => AgeLabelTable): AgeBulkStatement {
  const values: string[] = [];
  const parameter = (column: readonly (string | number | null)[], type: 'text' | 'int'): string => {
    values.push(column.map((value) => value ?? NULL_TEXT).join(type === 'text' ? TEXT_SEPARATOR : ','));
    const split = `string_to_array($${values.length}::text, ${type === 'text' ? "E'\\x1e'" : "','"}, '${NULL_TEXT}')`;
    return type === 'text' ? split : `${split}::int[]`;
  };
  const sql = new AgeBulkSql(graph);
  const ends = endNodes(write);
  const carried = new Map<number, 'all' | 'created'>();
  for (const end of ends.values())
    for (const candidate of end.candidates) if (carried.get(candidate.batch) !== 'created') carried.set(candidate.batch, candidate.rows);
  const queries = write.nodes.flatMap((batch, i) => {
    const props = parameter(
      batch.nodes.map((node) => agtypeText(node, batch.properties)),
      'text',
    );
    const key = batch.skipExisting;
    const keys =
      key === undefined
        ? undefined
        : parameter(
            batch.nodes.map((node) => JSON.stringify(node[key])),
            'text',
          );
    return sql.nodeQueries(i, batch, tableOf({ name: batch.label, kind: 'vertex' }), props, keys, carried.get(i));
  });
  write.relationships.forEach((batch, j) => {
    const arrays: string[] = [];
    const names: string[] = [];
    const column = (value: readonly (string | number | null)[], type: 'text' | 'int', name: string): void => {
      arrays.push(parameter(value, type));
      names.push(name);
    };
    const ids = (['from', 'to'] as const).map((end) => {
      const index = batch[end];
      const nodes = ends.get(endKey(index));
      const located = batch.relationships.map((row) => nodes?.byKey.get(row[end]));
      if (nodes !== undefined) {
        column(
          located.map((found) => found?.row ?? null),
          'int',
          `${end}_row`,
        );
        if (nodes.candidates.length > 1)
          column(
            located.map((found) => found?.candidate.batch ?? null),
            'int',
            `${end}_batch`,
          );
      }
      // the key only where the end may not be one of this write's nodes
      column(
        batch.relationships.map((row, r) => (located[r]?.candidate.rows === 'all' ? null : JSON.stringify(row[end]))),
        'text',
        `${end}_key`,
      );
      return sql.endId(end, index, nodes?.candidates ?? []);
    });
    if (batch.properties.length > 0)
      column(
        batch.relationships.map((row) => agtypeText(row.properties ?? {}, batch.properties)),
        'text',
        'props',
      );
    queries.push(sql.relationshipQuery(j, batch, tableOf({ name: batch.type, kind: 'edge' }), arrays, names, [ids[0]!, ids[1]!]));
  });
  return { text: `WITH ${queries.join(', ')} SELECT 1 AS done`, values };
}

/** The SQL texts of ageBulkInsert's queries, for one graph. */
class AgeBulkSql {
  private readonly schema: string;

  constructor(private readonly graph: string) {
    this.schema = quotedIdentifier(graph);
  }

  /** A node batch's rows with their graph ids (`n<i>`), their insert (`w<i>`), and when relationships need them, the ids by row (`a<i>`). */
  nodeQueries(
    i: number,
    batch: CheckedNodeBatch,
    table: AgeLabelTable,
    props: string,
    keys: string | undefined,
    carried: 'all' | 'created' | undefined,
  ): string[] {
    const newId = this.newId(table);
    const rows =
      keys === undefined
        ? `n${i} AS MATERIALIZED (SELECT row.ord, row.props, ${newId} AS id FROM unnest(${props}) WITH ORDINALITY AS row(props, ord))`
        : // OFFSET 0 keeps the lookup in the subquery: pulled up, it would run again for the COALESCE
          `n${i} AS MATERIALIZED (SELECT row.ord, row.props, row.stored, COALESCE(row.stored, ${newId}) AS id FROM (SELECT given.ord, given.props, ` +
          `${this.lookup(batch.label, batch.skipExisting!, 'given.key')} AS stored FROM unnest(${props}, ${keys}) WITH ORDINALITY AS given(props, key, ord) OFFSET 0) AS row)`;
    const insert =
      `w${i} AS (INSERT INTO ${this.table(batch.label)} (id, properties) SELECT id, ag_catalog.agtype_in(props::cstring) FROM n${i}` +
      `${keys === undefined ? '' : ' WHERE stored IS NULL'})`;
    if (carried === undefined) return [rows, insert];
    const created = carried === 'created' ? ', array_agg(CASE WHEN stored IS NULL THEN id END ORDER BY ord) AS created' : '';
    return [rows, insert, `a${i} AS (SELECT array_agg(id ORDER BY ord) AS ids${created} FROM n${i})`];
  }

  /** The graph id of a relationship end: from this write's nodes by row number where it is one of them, else looked up by key. */
  endId(end: 'from' | 'to', index: GraphPropertyIndex, candidates: readonly Candidate[]): string {
    const lookup = this.lookup(index.label, index.property, `row.${end}_key`);
    if (candidates.length === 0) return lookup;
    // an uncorrelated subquery runs once (an InitPlan): the subscript is then a constant-time read of the array
    const fromBatch = (candidate: Candidate): string => `(SELECT ${candidate.rows === 'all' ? 'ids' : 'created'} FROM a${candidate.batch})[row.${end}_row]`;
    const carried =
      candidates.length === 1
        ? fromBatch(candidates[0]!)
        : `CASE row.${end}_batch ${candidates.map((candidate) => `WHEN ${candidate.batch} THEN ${fromBatch(candidate)}`).join(' ')} END`;
    // COALESCE evaluates the lookup only when the row is not carried
    return `COALESCE(${carried}, ${lookup})`;
  }

  /** A relationship batch's insert (`r<j>`): its rows' end ids, and the rows whose ends were both found. */
  relationshipQuery(
    j: number,
    batch: CheckedRelationshipBatch,
    table: AgeLabelTable,
    arrays: readonly string[],
    names: readonly string[],
    ids: [string, string],
  ): string {
    const props = batch.properties.length > 0 ? 'ag_catalog.agtype_in(found.props::cstring)' : "'{}'::ag_catalog.agtype";
    const carriedProps = batch.properties.length > 0 ? ', row.props' : '';
    // OFFSET 0 keeps the ends in the subquery: pulled up, each would be found again for the IS NOT NULL test
    const found = `SELECT ${ids[0]} AS start_id, ${ids[1]} AS end_id${carriedProps} FROM unnest(${arrays.join(', ')}) AS row(${names.join(', ')}) OFFSET 0`;
    return (
      `r${j} AS (INSERT INTO ${this.table(batch.type)} (id, start_id, end_id, properties) SELECT ${this.newId(table)}, found.start_id, found.end_id, ${props} ` +
      `FROM (${found}) AS found WHERE found.start_id IS NOT NULL AND found.end_id IS NOT NULL)`
    );
  }

  /** The graph id of the node of `label` whose `property` equals the JSON text `key`, looked up through its index. */
  private lookup(label: string, property: string, key: string): string {
    return `(SELECT node.id FROM ${this.table(label)} AS node WHERE ${agePropertyKey(property, 'node')} = ag_catalog.agtype_in(${key}::cstring) LIMIT 1)`;
  }

  /** A new graph id of the label, as the id column's default makes it, with the label id known. */
  private newId(table: AgeLabelTable): string {
    const sequence = `${this.schema}.${quotedIdentifier(table.sequence)}`;
    return `ag_catalog._graphid(${table.id}, nextval('${sequence.replace(/'/g, "''")}'::regclass))`;
  }

  private table(label: string): string {
    return `${this.schema}.${quotedIdentifier(label)}`;
  }
}

/**
 * For each relationship end (label and key) that nodes of this write may be: those node batches, and the first row of
 * each key value among them (a key should name one node; of several, the first is taken).
 */
function endNodes(write: CheckedBulkCreate): Map<string, EndNodes> {
  const ends = new Map<string, EndNodes>();
  for (const batch of write.relationships) {
    for (const index of [batch.from, batch.to]) {
      const key = endKey(index);
      if (ends.has(key)) continue;
      const candidates: Candidate[] = [];
      const byKey = new Map<string | number, Found>();
      write.nodes.forEach((nodes, i) => {
        if (nodes.label !== index.label) return;
        const candidate: Candidate = { batch: i, rows: nodes.skipExisting === undefined || nodes.skipExisting === index.property ? 'all' : 'created' };
        candidates.push(candidate);
        nodes.nodes.forEach((node, n) => {
          const value = node[index.property];
          if (typeof value !== 'string' && typeof value !== 'number') return;
          if (!byKey.has(value)) byKey.set(value, { candidate, row: n + 1 });
        });
      });
      if (candidates.length > 0) ends.set(key, { candidates, byKey });
    }
  }
  return ends;
}

function endKey(index: GraphPropertyIndex): string {
  return `${index.label}.${index.property}`;
}

/**
 * The properties as agtype text (JSON, which agtype_in reads; integers stay integers, other numbers become floats),
 * leaving out nulls and what JSON has no value for (NaN, infinities), as a null is left out. `names` are all the
 * names the properties may have (checkBulkCreate made sure of it).
 */
function agtypeText(properties: GraphProperties, names: readonly string[]): string {
  // most rows have nothing to leave out: then JSON.stringify of the whole row, one call, says it
  for (const name in properties) {
    const value = properties[name];
    if (value === null || value === undefined || (typeof value === 'number' && !Number.isFinite(value))) return withoutNulls(properties, names);
  }
  return JSON.stringify(properties);
}

function withoutNulls(properties: GraphProperties, names: readonly string[]): string {
  const parts: string[] = [];
  for (const name of names) {
    const json = JSON.stringify(properties[name]);
    // undefined for a missing property, 'null' for null, NaN and infinities
    if (json !== undefined && json !== 'null') parts.push(`"${name}":${json}`);
  }
  return `{${parts.join(',')}}`;
}

function quotedIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
