import { createPool } from '@loom/postgres';
import type pg from 'pg';
import { type AgeStoreOptions } from './age-store.js';
import { GraphQueryError, graphErrorFromPg, type GraphErrorContext } from './errors.js';
import { bracketed, type AgeConnection } from './parameters.js';

/** Runs one SQL statement on a connection prepared for AGE (the AGE store's own, on its lease). */
export type AgeSql = (query: string | pg.QueryConfig) => Promise<pg.QueryResult>;

/** Installs AGE in the database unless it is there; another process installing it at the same time is no failure. */
export async function ensureAgeExtension(sql: AgeSql): Promise<void> {
  const installed = async (): Promise<boolean> => (await sql("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'age'")).rowCount === 1;
  if (await installed()) return;
  try {
    await sql('CREATE EXTENSION IF NOT EXISTS age');
  } catch (error) {
    if (!(await installed())) throw error; // another process may have won the race
  }
}

/**
 * Creates the graph unless it exists (another writer creating it at the same time is no failure). A read_only store
 * creates nothing: a missing graph is then a GraphQueryError (3F000), also on a database without AGE yet.
 */
export async function ensureAgeGraph(sql: AgeSql, graph: string, readOnly: boolean, address: string): Promise<void> {
  const exists = async (): Promise<boolean> => (await sql({ text: 'SELECT 1 FROM ag_catalog.ag_graph WHERE name = $1', values: [graph] })).rowCount === 1;
  // a read_only store installs nothing: on a database without AGE yet (a fresh embedded graph) there is no catalog to ask
  const installed = !readOnly || (await sql("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'ag_catalog'")).rowCount === 1;
  if (installed && (await exists())) return;
  if (readOnly) throw new GraphQueryError('age', address, '3F000', `graph '${graph}' does not exist, and a read_only resource does not create it`);
  try {
    await sql({ text: 'SELECT ag_catalog.create_graph($1::name)', values: [graph] });
  } catch (error) {
    if (!(await exists())) throw error; // another writer made it in the meantime
  }
}

/**
 * The names of the AGE graphs of a PostgreSQL database (ag_catalog.ag_graph), sorted; none when AGE was never
 * installed there. Reads only.
 */
export async function listAgeGraphs(connection: Omit<AgeConnection, 'graph' | 'readOnly'>, options: Pick<AgeStoreOptions, 'embedded'> = {}): Promise<string[]> {
  const credentials = `${encodeURIComponent(connection.user)}:${encodeURIComponent(connection.password)}`;
  const url = `postgresql://${credentials}@${bracketed(connection.host)}:${connection.port}/${encodeURIComponent(connection.database)}`;
  const db = createPool(url, { applicationName: 'loom-graph', ...(options.embedded === undefined ? {} : { embedded: options.embedded }) });
  const context: GraphErrorContext = {
    store: 'age',
    address: `${bracketed(connection.host)}:${connection.port}/${connection.database}`,
    password: connection.password,
    readOnly: true,
  };
  try {
    const installed = await db.pool.query("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'ag_catalog'");
    if (installed.rowCount !== 1) return [];
    const graphs = await db.pool.query<{ name: string }>('SELECT name::text AS name FROM ag_catalog.ag_graph ORDER BY name');
    return graphs.rows.map((row) => row.name);
  } catch (error) {
    throw graphErrorFromPg(error, context);
  } finally {
    await db.close();
  }
}
