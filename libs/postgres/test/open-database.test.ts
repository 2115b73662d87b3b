import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ListenError } from '@loom/foundation';
import { testDatabaseUrl } from '@loom/testing';
import { describe, expect, it } from 'vitest';
import { DatabaseOpenError, DatabaseUnavailableError, LOCK_FILE_NAME, MigrationFailedError, openDatabase, type Migration } from '../src/index.js';
import { createScratchDatabase, queryOnce } from '../src/testing.js';
import { recordingLogger, uniqueSuffix, useCleanup } from './harness.js';

const realDatabaseUrl = testDatabaseUrl('openDatabase');

const cleanup = useCleanup();

function migrationsOf(table: string): Migration[] {
  return [
    { version: 1, name: 'create', sql: `CREATE TABLE public.${table} (id integer PRIMARY KEY)` },
    { version: 2, name: 'seed', sql: `INSERT INTO public.${table} (id) VALUES (1), (2)` },
  ];
}

const broken: Migration[] = [
  { version: 1, name: 'create', sql: 'CREATE TABLE public.open_broken (id integer PRIMARY KEY)' },
  { version: 2, name: 'typo', sql: 'CREATE TABLE public.open_broken_two (id integr)' },
];

describe('openDatabase on the embedded PostgreSQL', () => {
  it('starts the server, migrates, and stops the server again on close (twice is once)', async () => {
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    const logger = recordingLogger();
    const opened = await openDatabase({
      embedded: { dataDir },
      component: 'open-embedded',
      schemaName: 'open test',
      migrations: migrationsOf('open_embedded'),
      logger,
    });
    cleanup.add(opened);

    expect(opened.embedded?.dataDir).toBe(dataDir);
    expect(opened.target.address).toBe(`127.0.0.1:${opened.embedded?.port}/postgres`);
    expect((await opened.db.query<{ id: number }>('SELECT id FROM public.open_embedded ORDER BY id')).rows).toEqual([{ id: 1 }, { id: 2 }]);
    expect(logger.entries).toContainEqual({ level: 'info', obj: { applied: [1, 2] }, msg: 'open test schema migrated' });

    await Promise.all([opened.close(), opened.close()]);
    await opened.close();
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
    await expect(opened.db.query('SELECT 1')).rejects.toThrow();
  }, 120_000);

  it('releases the server it started when a migration fails, and throws the migration error', async () => {
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    const failure = openDatabase({ embedded: { dataDir }, component: 'open-broken', migrations: broken, logger: recordingLogger() });

    await expect(failure).rejects.toBeInstanceOf(MigrationFailedError);
    await expect(failure).rejects.toMatchObject({ component: 'open-broken', version: 2, migrationName: 'typo' });
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);

    // the directory is free again, and the first migration stayed applied
    const reopened = cleanup.add(await openDatabase({ embedded: { dataDir }, component: 'open-other', migrations: [], logger: recordingLogger() }));
    expect((await reopened.db.query<{ name: string }>("SELECT name FROM public.loom_schema_migrations WHERE component = 'open-broken'")).rows).toEqual([
      { name: 'create' },
    ]);
  }, 120_000);

  it('names the port setting when the embedded server cannot listen, and releases the data directory', async () => {
    // issue 49 (loud failures): a real listener holds the port
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    cleanup.add({ close: () => new Promise<void>((resolve) => blocker.close(() => resolve())) });
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    const failure = openDatabase({
      embedded: { dataDir, port: taken },
      embeddedPortSetting: 'loom.embedded.postgres.port',
      component: 'open-taken',
      migrations: [],
      logger: recordingLogger(),
    });
    await expect(failure).rejects.toBeInstanceOf(ListenError);
    await expect(failure).rejects.toThrow(`loom.embedded.postgres.port ${taken} is in use (EADDRINUSE): set loom.embedded.postgres.port to a free port`);
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);
  }, 120_000);
});

describe.skipIf(realDatabaseUrl === undefined)('openDatabase on a PostgreSQL server', () => {
  async function scratchUrl(): Promise<string> {
    const scratch = await createScratchDatabase(realDatabaseUrl!, 'loom_open');
    cleanup.add({ close: () => scratch.drop() });
    return scratch.url;
  }

  it('opens the URL, migrates, and closes the pool', async () => {
    const url = await scratchUrl();
    const applicationName = `loom-open-${uniqueSuffix()}`;
    const logger = recordingLogger();
    const opened = cleanup.add(await openDatabase({ url, component: 'open-real', migrations: migrationsOf('open_real'), applicationName, logger }));

    expect(opened.embedded).toBeUndefined();
    expect(opened.target.address).toBe(new URL(url).host + new URL(url).pathname);
    expect(await queryOnce(url, 'SELECT id FROM public.open_real ORDER BY id')).toEqual([{ id: 1 }, { id: 2 }]);
    expect(logger.entries).toContainEqual({ level: 'info', obj: { applied: [1, 2] }, msg: 'open-real schema migrated' });

    await opened.close();
    await opened.close();
    await expect.poll(() => connectionsOf(url, applicationName)).toBe(0);
  });

  it('closes its connections when a migration fails', async () => {
    const url = await scratchUrl();
    const applicationName = `loom-open-${uniqueSuffix()}`;
    const failure = openDatabase({ url, component: 'open-broken', migrations: broken, applicationName, logger: recordingLogger() });

    await expect(failure).rejects.toBeInstanceOf(MigrationFailedError);
    await expect.poll(() => connectionsOf(url, applicationName)).toBe(0);
  });

  it('reports a database that does not exist as DatabaseUnavailableError naming its address', async () => {
    const url = new URL(realDatabaseUrl!);
    const missing = `loom_open_missing_${uniqueSuffix()}`;
    url.pathname = `/${missing}`;
    const failure = openDatabase({ url: url.toString(), component: 'open-missing', migrations: [], logger: recordingLogger() });

    await expect(failure).rejects.toBeInstanceOf(DatabaseUnavailableError);
    await expect(failure).rejects.toMatchObject({ address: `${url.hostname}:${url.port || 5432}/${missing}` });
  });

  it('names the component and the address when the bookkeeping table cannot be created, and closes its connections', async () => {
    const url = new URL(await scratchUrl());
    // PostgreSQL 15 lets only the owner create in public: a role of its own may connect but not migrate
    const role = `loom_open_${uniqueSuffix()}`;
    const password = `pw-${uniqueSuffix()}`;
    await queryOnce(realDatabaseUrl!, `CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
    cleanup.add({ close: () => queryOnce(realDatabaseUrl!, `DROP ROLE IF EXISTS ${role}`).then(() => undefined) });
    url.username = role;
    url.password = password;
    const applicationName = `loom-open-${uniqueSuffix()}`;
    const failure = openDatabase({
      url: url.toString(),
      component: 'open-denied',
      migrations: migrationsOf('open_denied'),
      applicationName,
      logger: recordingLogger(),
    });

    await expect(failure).rejects.toBeInstanceOf(DatabaseOpenError);
    await expect(failure).rejects.toMatchObject({ component: 'open-denied', address: `${url.hostname}:${url.port || 5432}${url.pathname}` });
    await expect(failure).rejects.toThrow(/permission denied for schema public/);
    await expect.poll(() => connectionsOf(url.toString(), applicationName)).toBe(0);
  });
});

async function connectionsOf(url: string, applicationName: string): Promise<number> {
  const rows = await queryOnce<{ count: string }>(url, `SELECT count(*) AS count FROM pg_stat_activity WHERE application_name = '${applicationName}'`);
  return Number(rows[0]?.count);
}
