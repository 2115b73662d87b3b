import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DataDirectoryInUseError,
  DatabaseUnavailableError,
  type EmbeddedPostgres,
  LOCK_FILE_NAME,
  NonLoopbackHostError,
  createPool,
  makeTemplateDataDir,
  migrate,
  startEmbeddedPostgres,
  type Migration,
} from '../src/index.js';
import { recordingLogger, useCleanup } from './harness.js';
import { ProtocolConnection } from './wire.js';

const notes: Migration[] = [
  { version: 1, name: 'note', sql: 'CREATE TABLE public.note (id integer PRIMARY KEY, text text NOT NULL)' },
  { version: 2, name: 'note_author', sql: "ALTER TABLE public.note ADD COLUMN author text NOT NULL DEFAULT 'nobody'" },
];

describe('startEmbeddedPostgres', () => {
  const cleanup = useCleanup();

  it('keeps data and migrations across a restart on the same directory', async () => {
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    const logger = recordingLogger();

    const first = await startEmbeddedPostgres({ dataDir, logger, templateDir: join(dataDir, '..', 'no-template') });
    expect(first.url).toBe(`postgresql://postgres@127.0.0.1:${first.port}/postgres`);
    expect(first.port).toBeGreaterThan(0);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    const db = createPool(first.url);
    expect(await migrate(db, 'notes', notes)).toEqual({ applied: [1, 2] });
    await db.query('INSERT INTO public.note (id, text) VALUES ($1, $2)', [1, 'survives a restart']);
    await db.close();
    await first.close();
    expect(existsSync(join(dataDir, LOCK_FILE_NAME))).toBe(false);

    const second = cleanup.add(await startEmbeddedPostgres({ dataDir, logger }));
    const again = cleanup.add(createPool(second.url));
    expect(await migrate(again, 'notes', notes)).toEqual({ applied: [] });
    const notesAfter = await again.query('SELECT id, text, author FROM public.note');
    expect(notesAfter.rows).toEqual([{ id: 1, text: 'survives a restart', author: 'nobody' }]);
    const history = await again.query('SELECT version, name FROM public.loom_schema_migrations WHERE component = $1 ORDER BY version', ['notes']);
    expect(history.rows).toEqual([
      { version: 1, name: 'note' },
      { version: 2, name: 'note_author' },
    ]);
    expect(logger.entries.filter((entry) => entry.msg === 'embedded PostgreSQL started').map((entry) => entry.obj)).toEqual([
      { dataDir, host: '127.0.0.1', port: first.port, created: 'by initdb' },
      { dataDir, host: '127.0.0.1', port: second.port, created: false },
    ]);
  });

  it('fills a fresh directory from the template instead of running initdb, and finishes a fill that was cut short', async () => {
    const root = await cleanup.tempDir();
    const templateDir = join(root, 'template');
    const logger = recordingLogger();
    await (await startEmbeddedPostgres({ dataDir: templateDir, templateDir: join(root, 'no-template') })).close();

    const fresh = join(root, 'fresh');
    const interrupted = join(root, 'interrupted');
    mkdirSync(interrupted);
    writeFileSync(join(interrupted, 'loom-seeding'), '');
    writeFileSync(join(interrupted, 'postgresql.conf'), 'half a file');
    for (const dataDir of [fresh, interrupted]) {
      const server = cleanup.add(await startEmbeddedPostgres({ dataDir, logger, templateDir, sharedBuffers: '16MB' }));
      const db = cleanup.add(createPool(server.url));
      expect(await migrate(db, 'notes', notes)).toEqual({ applied: [1, 2] });
      expect((await db.query('SHOW shared_buffers')).rows).toEqual([{ shared_buffers: '16MB' }]);
      expect(existsSync(join(dataDir, 'loom-seeding'))).toBe(false);
    }
    expect(logger.entries.filter((entry) => entry.msg === 'embedded PostgreSQL started').map((entry) => (entry.obj as { created: unknown }).created)).toEqual([
      'from template',
      'from template',
    ]);
  });

  it("makes the build's template without template0: a fresh directory copied from it has postgres and template1, and CREATE DATABASE works", async () => {
    const root = await cleanup.tempDir();
    const templateDir = join(root, 'template');
    await makeTemplateDataDir(templateDir);
    expect(existsSync(join(templateDir, 'PG_VERSION'))).toBe(true);
    const logger = recordingLogger();
    const server = cleanup.add(await startEmbeddedPostgres({ dataDir: join(root, 'fresh'), logger, templateDir }));
    expect(logger.entries.find((entry) => entry.msg === 'embedded PostgreSQL started')?.obj).toMatchObject({ created: 'from template' });
    const db = cleanup.add(createPool(server.url));
    expect((await db.query('SELECT datname FROM pg_database ORDER BY datname')).rows).toEqual([{ datname: 'postgres' }, { datname: 'template1' }]);
    await db.query('CREATE DATABASE scratch');
    expect((await db.query("SELECT datname FROM pg_database WHERE datname = 'scratch'")).rows).toEqual([{ datname: 'scratch' }]);
    expect(await migrate(db, 'notes', notes)).toEqual({ applied: [1, 2] });
  });

  it('leaves a directory it did not create to initdb rather than copying the template over it', async () => {
    const root = await cleanup.tempDir();
    const templateDir = join(root, 'template');
    await (await startEmbeddedPostgres({ dataDir: templateDir, templateDir: join(root, 'no-template') })).close();
    const dataDir = join(root, 'someone-elses');
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, 'notes.txt'), 'mine');
    const logger = recordingLogger();
    cleanup.add(await startEmbeddedPostgres({ dataDir, logger, templateDir }));
    expect(logger.entries.find((entry) => entry.msg === 'embedded PostgreSQL started')?.obj).toMatchObject({ created: 'by initdb' });
    expect(readFileSync(join(dataDir, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('refuses a host that is not loopback, before touching the directory', async () => {
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    for (const host of ['0.0.0.0', '192.168.1.10', '::', 'db.example.com']) {
      await expect(startEmbeddedPostgres({ dataDir, host })).rejects.toBeInstanceOf(NonLoopbackHostError);
    }
    expect(existsSync(dataDir)).toBe(false);
    const error = await startEmbeddedPostgres({ dataDir, host: '0.0.0.0' }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ kind: 'invalid-argument', host: '0.0.0.0' });
  });

  it('takes over the lock of a process that is gone', async () => {
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    const first = await startEmbeddedPostgres({ dataDir });
    await first.close();
    const exited = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(join(dataDir, LOCK_FILE_NAME), `${exited.stdout}\n`);

    const server = cleanup.add(await startEmbeddedPostgres({ dataDir }));
    expect(readFileSync(join(dataDir, LOCK_FILE_NAME), 'utf8').trim()).toBe(String(process.pid));
    expect(server.port).toBeGreaterThan(0);
  });

  // one server for the tests that need a running one and no directory or start of their own (a start is about two
  // CPU-seconds); the last of them closes it
  describe('a running server', () => {
    let shared: { server: EmbeddedPostgres; dataDir: string };
    beforeAll(async () => {
      const dataDir = join(await mkdtemp(join(tmpdir(), 'loom-postgres-')), 'pgdata');
      shared = { server: await startEmbeddedPostgres({ dataDir }), dataDir };
    });
    afterAll(async () => {
      await shared?.server.close();
      if (shared !== undefined) await rm(dirname(shared.dataDir), { recursive: true, force: true });
    });

    it('fails with DataDirectoryInUseError naming the directory while another server owns it', async () => {
      const { dataDir } = shared;
      const error = await startEmbeddedPostgres({ dataDir }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(DataDirectoryInUseError);
      expect(error).toMatchObject({ kind: 'failed-precondition', dataDir, ownerPid: process.pid });
      expect((error as Error).message).toContain(dataDir);

      // the refused start left the owner's lock and server alone
      expect(readFileSync(join(dataDir, LOCK_FILE_NAME), 'utf8').trim()).toBe(String(process.pid));
      const db = cleanup.add(createPool(shared.server.url));
      expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    });

    it('serves 50 concurrent transactions from two pools and a psql-like client without interleaving them', { timeout: 30_000 }, async () => {
      const { server } = shared;
      const pools = [cleanup.add(createPool(server.url, { applicationName: 'a' })), cleanup.add(createPool(server.url, { applicationName: 'b' }))];
      const [first] = pools as [(typeof pools)[0]];
      await first.query('CREATE TABLE public.counter (id integer PRIMARY KEY, n integer NOT NULL)');
      await first.query('INSERT INTO public.counter VALUES (1, 0)');
      const operator = new pg.Client({ connectionString: server.url });
      await operator.connect();
      cleanup.add({ close: () => operator.end() });

      const increments = Array.from({ length: 50 }, (_, index) =>
        pools[index % 2]!.transaction(async (client) => {
          const { rows } = await client.query<{ n: number }>('SELECT n FROM public.counter WHERE id = $1', [1]);
          // give the other pool's connection every chance to slip in between the read and the write
          await new Promise((resolve) => setImmediate(resolve));
          await client.query('UPDATE public.counter SET n = $2 WHERE id = $1', [1, rows[0]!.n + 1]);
          return rows[0]!.n;
        }),
      );
      const reads = (async () => {
        const values: number[] = [];
        for (let index = 0; index < 10; index++) values.push((await operator.query<{ v: number }>('SELECT $1::int AS v', [index])).rows[0]!.v);
        return values;
      })();
      const seen = await Promise.all(increments);
      expect(await reads).toEqual([...Array(10).keys()]);
      expect(seen.sort((a, b) => a - b)).toEqual([...Array(50).keys()]);
      expect((await first.query('SELECT n FROM public.counter')).rows).toEqual([{ n: 50 }]);
    });

    it("does not run one connection's half-sent request against another's statement", async () => {
      const { server } = shared;
      const a = cleanup.add(await ProtocolConnection.open(server.host, server.port));
      const b = cleanup.add(await ProtocolConnection.open(server.host, server.port));

      const parsed = a.waitFor('1');
      a.send(ProtocolConnection.parse("SELECT 'from a' AS who"));
      await parsed;
      // a's statement is parsed but not yet bound; b sends a whole request of its own in between
      b.send(ProtocolConnection.parse("SELECT 'from b' AS who"), ProtocolConnection.bind(), ProtocolConnection.execute(), ProtocolConnection.sync());
      const bAnswer = b.readyForQuery();
      await b.settle();
      a.send(ProtocolConnection.bind(), ProtocolConnection.execute(), ProtocolConnection.sync());

      expect((await a.readyForQuery()).dataRows).toEqual(['from a']);
      expect((await bAnswer).dataRows).toEqual(['from b']);
    });

    it('rolls back the transaction of a connection that goes away, and serves the others again', async () => {
      const { server } = shared;
      const db = cleanup.add(createPool(server.url));
      await db.query('CREATE TABLE public.item (id integer PRIMARY KEY)');
      const quitter = new pg.Client({ connectionString: server.url });
      quitter.on('error', () => undefined);
      await quitter.connect();
      await quitter.query('BEGIN');
      await quitter.query('INSERT INTO public.item VALUES (1)');
      const waiting = db.query('SELECT count(*)::int AS n FROM public.item');
      await quitter.end();
      expect((await waiting).rows).toEqual([{ n: 0 }]);
    });

    it('close() ends open connections with DatabaseUnavailableError and can be called twice', async () => {
      const { server } = shared;
      const db = cleanup.add(createPool(server.url));
      expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await Promise.all([server.close(), server.close()]);

      const error = await db.query('SELECT 1').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(DatabaseUnavailableError);
      expect(error).toMatchObject({ kind: 'unavailable', address: `127.0.0.1:${server.port}/postgres` });
    });
  });
});
