import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DatabaseUnavailableError,
  InvalidMigrationsError,
  MigrationFailedError,
  MigrationHistoryError,
  createPool,
  migrate,
  startEmbeddedPostgres,
  type Database,
  type EmbeddedPostgres,
  type Migration,
} from '../src/index.js';
import { testDatabaseUrl } from '@loom/testing';
import { closedPort, uniqueSuffix, useCleanup } from './harness.js';

const realDatabaseUrl = testDatabaseUrl('migrate');

interface Backend {
  readonly name: string;
  /** URL of a fresh, empty database; dropped again in afterAll. */
  url(): Promise<string>;
}

const cleanup = useCleanup();
let embedded: EmbeddedPostgres | undefined;
let embeddedDir: string | undefined;
const dropDatabases: string[] = [];

const embeddedBackend: Backend = {
  name: 'embedded PGlite',
  async url() {
    // outlives the tests of the file, so its directory is not one of cleanup's (removed after each test)
    embeddedDir ??= await mkdtemp(join(tmpdir(), 'loom-migrate-'));
    embedded ??= await startEmbeddedPostgres({ dataDir: join(embeddedDir, 'pgdata') });
    // PGlite has one database: tests keep apart through distinct table and component names
    return embedded.url;
  },
};

const realBackend: Backend = {
  name: 'real PostgreSQL',
  async url() {
    const name = `loom_migrate_${uniqueSuffix()}`;
    const admin = new pg.Client({ connectionString: realDatabaseUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    dropDatabases.push(name);
    const url = new URL(realDatabaseUrl!);
    url.pathname = `/${name}`;
    return url.toString();
  },
};

afterAll(async () => {
  await embedded?.close();
  if (embeddedDir !== undefined) await rm(embeddedDir, { recursive: true, force: true });
  if (realDatabaseUrl === undefined) return;
  const admin = new pg.Client({ connectionString: realDatabaseUrl });
  await admin.connect();
  for (const name of dropDatabases) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
});

const backends = realDatabaseUrl === undefined ? [embeddedBackend] : [embeddedBackend, realBackend];

const steps: Migration[] = [
  { version: 1, name: 'account', sql: 'CREATE TABLE public.account (id integer PRIMARY KEY)' },
  { version: 2, name: 'account_email', sql: 'ALTER TABLE public.account ADD COLUMN email text' },
];

describe.each(backends)('migrate on $name', (backend) => {
  // every test gets its own database (real server) or the shared embedded one with distinct component names
  async function freshDatabase(): Promise<Database> {
    return cleanup.add(createPool(await backend.url()));
  }
  const table = (): string => `public.t_${uniqueSuffix()}`;

  it('applies each migration once, in order, and records it', async () => {
    const db = await freshDatabase();
    const name = table();
    const component = `c_${uniqueSuffix()}`;
    const migrations: Migration[] = [
      { version: 1, name: 'create', sql: `CREATE TABLE ${name} (id integer PRIMARY KEY)` },
      { version: 5, name: 'column', sql: `ALTER TABLE ${name} ADD COLUMN label text; INSERT INTO ${name} VALUES (1, 'one')` },
    ];
    expect(await migrate(db, component, migrations.slice(0, 1))).toEqual({ applied: [1] });
    expect(await migrate(db, component, migrations)).toEqual({ applied: [5] });
    expect(await migrate(db, component, migrations)).toEqual({ applied: [] });
    expect((await db.query(`SELECT id, label FROM ${name}`)).rows).toEqual([{ id: 1, label: 'one' }]);
  });

  it('rolls a failed migration back whole and names it', async () => {
    const db = await freshDatabase();
    const name = table();
    const component = `c_${uniqueSuffix()}`;
    const broken: Migration[] = [
      { version: 1, name: 'create', sql: `CREATE TABLE ${name} (id integer PRIMARY KEY)` },
      { version: 2, name: 'half', sql: `INSERT INTO ${name} VALUES (1); SELECT no_such_function()` },
    ];
    const error = await migrate(db, component, broken).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MigrationFailedError);
    expect((error as Error).message).toMatch(new RegExp(`migration 2 \\('half'\\) of '${component}' failed: .*no_such_function`));
    expect((await db.query(`SELECT count(*)::int AS n FROM ${name}`)).rows).toEqual([{ n: 0 }]);
    const recorded = await db.query('SELECT version FROM public.loom_schema_migrations WHERE component = $1', [component]);
    expect(recorded.rows).toEqual([{ version: 1 }]);
  });

  it('refuses an edited history and a malformed list before running anything', async () => {
    const db = await freshDatabase();
    const component = `c_${uniqueSuffix()}`;
    const name = table();
    await migrate(db, component, [{ version: 2, name: 'create', sql: `CREATE TABLE ${name} (id integer)` }]);
    await expect(migrate(db, component, [{ version: 2, name: 'renamed', sql: 'SELECT 1' }])).rejects.toThrow(MigrationHistoryError);
    await expect(
      migrate(db, component, [
        { version: 1, name: 'late', sql: 'SELECT 1' },
        { version: 2, name: 'create', sql: 'SELECT 1' },
      ]),
    ).rejects.toThrow(/migration 1 of .*later migration 2/);
    await expect(migrate(db, component, [steps[1]!, steps[0]!])).rejects.toThrow(InvalidMigrationsError);
    await expect(migrate(db, component, [{ version: 0, name: 'zero', sql: 'SELECT 1' }])).rejects.toThrow(/positive/);
  });

  it('applies each migration exactly once when several pools migrate at the same time', async () => {
    const url = await backend.url();
    const pools = [createPool(url), createPool(url), createPool(url)].map((pool) => cleanup.add(pool));
    const component = `c_${uniqueSuffix()}`;
    const name = table();
    const migrations: Migration[] = [
      { version: 1, name: 'create', sql: `CREATE TABLE ${name} (n integer NOT NULL)` },
      // not idempotent: running it twice would leave two rows
      { version: 2, name: 'seed', sql: `INSERT INTO ${name} VALUES (1)` },
    ];
    const results = await Promise.all(pools.map((pool) => migrate(pool, component, migrations)));
    expect(results.flatMap((result) => result.applied).sort()).toEqual([1, 2]);
    expect((await pools[0]!.query(`SELECT count(*)::int AS n FROM ${name}`)).rows).toEqual([{ n: 1 }]);
  });
});

describe('createPool', () => {
  it('reports an unreachable server as DatabaseUnavailableError naming the address but never the password', async () => {
    const port = await closedPort();
    const password = 'pa:ss/w0rd-never-shown';
    const db = cleanup.add(createPool(`postgresql://loom:${encodeURIComponent(password)}@127.0.0.1:${port}/loom`));
    const error = await db.query('SELECT 1').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DatabaseUnavailableError);
    expect(error).toMatchObject({ kind: 'unavailable', address: `127.0.0.1:${port}/loom` });
    const text = `${(error as Error).message} ${JSON.stringify(error)}`;
    expect(text).not.toContain(password);
    expect(text).not.toContain(encodeURIComponent(password));
  });

  it('rolls a transaction back when its function throws and keeps the connection usable', async () => {
    const server = cleanup.add(await startEmbeddedPostgres({ dataDir: join(await cleanup.tempDir(), 'pgdata') }));
    const db = cleanup.add(createPool(server.url));
    await db.query('CREATE TABLE public.entry (id integer PRIMARY KEY)');
    await expect(
      db.transaction(async (client) => {
        await client.query('INSERT INTO public.entry VALUES (1)');
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect((await db.query('SELECT count(*)::int AS n FROM public.entry')).rows).toEqual([{ n: 0 }]);
    expect(() => createPool(server.url, { max: 4 })).toThrow(/exactly one connection/);
  });
});
