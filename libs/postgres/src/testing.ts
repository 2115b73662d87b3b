import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** Runs one statement over a connection of its own and returns the rows (tests: setup, checks). */
export async function queryOnce<R extends pg.QueryResultRow = pg.QueryResultRow>(url: string, text: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text)).rows;
  } finally {
    await client.end();
  }
}

/** A database of its own on a shared PostgreSQL server, for one test suite. */
export interface ScratchDatabase {
  readonly name: string;
  readonly url: string;
  /** Drops the database, ending the connections still open to it. */
  drop(): Promise<void>;
}

/** Creates a fresh database (`<prefix>_<pid>_<random>`) on the server of `adminUrl` and returns its URL. */
export async function createScratchDatabase(adminUrl: string, prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await queryOnce(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: async () => void (await queryOnce(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)) };
}
