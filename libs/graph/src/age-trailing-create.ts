import { ageStatement, type AgeStatement } from './age-statement.js';
import type { GraphParameters } from './graph-store.js';
import type { TrailingRelationshipCreate } from './trailing-create.js';

/**
 * The SQL that writes a statement ending in a CREATE of one relationship between bound nodes (see
 * trailingRelationshipCreate) as AGE's CREATE would, without it: the statement before the CREATE runs in `cypher()`
 * returning, for every row that would reach the CREATE, the two nodes' ids and the property values, and an INSERT puts
 * one row a result row into the type's label table (whose defaults give each its graph id). The properties are built
 * by `agtype_build_map_nonull`, the function AGE's CREATE builds a map literal with, so null values are left out as
 * there. AGE's CREATE checks that each end node still exists by reading its label table from the start, a cost that
 * grows with the graph; nodes bound earlier in a statement that deletes nothing exist, and the insert leaves it out.
 * The label table must exist. `graph` and the type are checked identifiers.
 */
export function ageTrailingCreateInsert(graph: string, create: TrailingRelationshipCreate, parameters: GraphParameters, address: string): AgeStatement {
  const values = create.properties.map((property) => property.expression);
  const cypher = `${create.head} RETURN id(${create.from}), id(${create.to})${values.map((value) => `, ${value}`).join('')}`;
  const columns = ['start_id', 'end_id', ...create.properties.map((_, index) => `p${index}`)];
  const returned = ageStatement(graph, cypher, parameters, columns, address);
  // ageStatement declares the result columns c0, c1, ... in order
  const map =
    create.properties.length === 0
      ? 'ag_catalog.agtype_build_map()'
      : `ag_catalog.agtype_build_map_nonull(${create.properties.map((property, index) => `'${property.key}', c${index + 2}`).join(', ')})`;
  return {
    sql:
      `INSERT INTO "${graph}"."${create.type}" (start_id, end_id, properties) ` +
      `SELECT c0::ag_catalog.graphid, c1::ag_catalog.graphid, ${map} FROM (${returned.sql}) AS found`,
    values: returned.values,
    columns: [],
  };
}
