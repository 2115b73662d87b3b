import { parseAgtype } from './agtype.js';
import { deriveReturnColumns } from './cypher-text.js';
import { GraphQueryError } from './errors.js';
import { type GraphParameters, type GraphRecord, type GraphValue } from './graph-store.js';

/** A Cypher statement wrapped for AGE: the SQL text, its one parameter and the names of its result columns. */
export interface AgeStatement {
  readonly sql: string;
  /** `$1`: every Cypher parameter in one agtype map, as JSON text. */
  readonly values: [string];
  readonly columns: readonly string[];
}

/**
 * Wraps Cypher for AGE's `cypher()` function. The text goes between `$$` dollar quotes (so one containing `$$` is
 * refused), the parameters as ONE agtype map in `$1` (AGE accepts parameters only that way, and only from a prepared
 * statement, which is what pg's extended protocol gives), and the result columns are declared (`AS (c0 agtype, ...)`),
 * taken from `columns` or derived from a simple RETURN clause. Errors are GraphQueryError naming the problem.
 */
export function ageStatement(graph: string, query: string, parameters: GraphParameters, columns: readonly string[] | undefined, address: string): AgeStatement {
  const refuse = (reason: string): GraphQueryError => new GraphQueryError('age', address, undefined, reason);
  if (query.includes('$$')) {
    throw refuse("the Cypher text contains '$$', which would end the dollar-quoted text AGE receives; pass that value as a parameter instead");
  }
  // AGE's parser refuses a trailing semicolon, which Neo4j accepts
  const cypher = query.trim().replace(/;+\s*$/, '');
  if (cypher === '') throw refuse('the Cypher text is empty');

  let names: readonly string[];
  if (columns !== undefined) {
    if (columns.some((column) => typeof column !== 'string' || column === '') || new Set(columns).size !== columns.length) {
      throw refuse('options.columns must be distinct non-empty names');
    }
    names = columns;
  } else {
    const derived = deriveReturnColumns(cypher);
    if (!derived.ok) throw refuse(`AGE needs the return columns declared and ${derived.problem}: pass options.columns (one name per RETURN item)`);
    names = derived.columns;
  }

  let json: string;
  try {
    json = JSON.stringify(parameters);
  } catch (error) {
    throw new GraphQueryError('age', address, undefined, `the parameters are not JSON: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  // a statement without RETURN still needs one declared column (AGE insists on exactly one) and yields no rows
  const declared = names.length === 0 ? 'result ag_catalog.agtype' : names.map((_, index) => `c${index} ag_catalog.agtype`).join(', ');
  // the spaces keep a text that starts or ends with '$' from merging into the quotes
  const sql = `SELECT * FROM ag_catalog.cypher('${graph}', $$ ${cypher} $$, $1) AS (${declared})`;
  return { sql, values: [json], columns: names };
}

/** Turns one result row (agtype texts, in declared column order) into a record keyed by column name. */
export function ageRecord(columns: readonly string[], row: readonly unknown[]): GraphRecord {
  const record: { [column: string]: GraphValue } = {};
  columns.forEach((column, index) => {
    const cell = row[index];
    const value = cell === null || cell === undefined ? null : parseAgtype(typeof cell === 'string' ? cell : JSON.stringify(cell));
    Object.defineProperty(record, column, { value, enumerable: true, writable: true, configurable: true });
  });
  return record;
}
