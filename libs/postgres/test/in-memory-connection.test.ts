import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withResolvers } from '@loom/foundation';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DatabaseUnavailableError,
  DataDirectoryInUseError,
  createPool,
  type Database,
  EmbeddedPostgresStartError,
  startEmbeddedPostgres,
  startEmbeddedPostgresInWorker,
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
} from '../src/index.js';
import { useCleanup } from './harness.js';

/**
 * A transaction on `db` that runs a statement, then holds its connection until `release`; `transaction` settles with
 * what it returned or the error it failed with (caught at once: it may fail while a server closes).
 */
async function heldTransaction(db: Database): Promise<{ transaction: Promise<unknown>; release: () => void }> {
  const { resolve: began, promise: begun } = withResolvers();
  const { resolve: release, promise: held } = withResolvers();
  const transaction = db
    .transaction(async (client) => {
      await client.query('SELECT 1');
      began();
      await held;
      await client.query('SELECT 2');
    })
    .catch((error: unknown) => error);
  await begun;
  return { transaction, release };
}

/** The two ways to run the embedded server: PGlite on the caller's thread, or in a worker thread of its own. */
const SERVERS: [string, (options: EmbeddedPostgresOptions) => Promise<EmbeddedPostgres>][] = [
  ['PGlite in this thread', startEmbeddedPostgres],
  ['PGlite in a worker thread', startEmbeddedPostgresInWorker],
];

describe.each(SERVERS)('connections in memory to an embedded server of this process (%s)', (_name, startServer) => {
  const cleanup = useCleanup();
  let server: EmbeddedPostgres;
  let removeDir: () => Promise<void>;

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'loom-postgres-'));
    removeDir = () => rm(dir, { recursive: true, force: true });
    server = await startServer({ dataDir: join(dir, 'pgdata') });
    const setup = createPool(server.url);
    await setup.query('CREATE TABLE public.item (id integer PRIMARY KEY)');
    await setup.close();
  });

  afterAll(async () => {
    await server.close();
    await removeDir();
  });

  it('serves a pool of this process without a TCP connection, and a pg client given the URL over TCP', async () => {
    const before = server.connectionCounts();
    const db = cleanup.add(createPool(server.url));
    expect((await db.query('SELECT $1::int AS one', [1])).rows).toEqual([{ one: 1 }]);
    expect(server.connectionCounts()).toMatchObject({ tcpAccepted: before.tcpAccepted, inMemoryOpened: before.inMemoryOpened + 1 });

    const operator = new pg.Client({ connectionString: server.url });
    await operator.connect();
    cleanup.add({ close: () => operator.end() });
    expect((await operator.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    expect(server.connectionCounts().tcpAccepted).toBe(before.tcpAccepted + 1);
  });

  it("holds another connection's statements until a transaction in memory commits", async () => {
    const writer = cleanup.add(createPool(server.url));
    const reader = cleanup.add(createPool(server.url));
    const operator = new pg.Client({ connectionString: server.url });
    await operator.connect();
    cleanup.add({ close: () => operator.end() });
    const events: string[] = [];
    let reads: Promise<unknown>[] = [];

    await writer.transaction(async (client) => {
      await client.query('INSERT INTO public.item VALUES ($1)', [1]);
      const count = (from: string, query: Promise<pg.QueryResult<{ n: number }>>) => query.then((result) => events.push(`${from} counts ${result.rows[0]!.n}`));
      reads = [
        count('pool', reader.query('SELECT count(*)::int AS n FROM public.item')),
        count('tcp', operator.query<{ n: number }>('SELECT count(*)::int AS n FROM public.item')),
      ];
      // both reads are sent and waiting; give them every chance to run inside this transaction
      for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
      await client.query('INSERT INTO public.item VALUES ($1)', [2]);
      events.push('writer commits');
    });
    await Promise.all(reads);
    await writer.query('DELETE FROM public.item');

    expect(events[0]).toBe('writer commits');
    expect(events.slice(1).sort()).toEqual(['pool counts 2', 'tcp counts 2']);
  });

  it('fails a statement with the server error, typed and coded, and keeps the connection', async () => {
    const db = cleanup.add(createPool(server.url));
    const error = await db.query('SELECT * FROM public.missing WHERE id = $1', [1]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(pg.DatabaseError);
    expect(error).toMatchObject({ code: '42P01', message: 'relation "public.missing" does not exist' });
    const failed = await db.transaction((client) => client.query('SELECT 1/0')).catch((caught: unknown) => caught);
    expect(failed).toMatchObject({ code: '22012' });
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('lets work that holds the connection while its pool closes finish, then closes the connection; close twice is once', async () => {
    const db = createPool(server.url);
    const { resolve: began, promise: begun } = withResolvers();
    const { resolve: release, promise: held } = withResolvers();
    const work = db.transaction(async (client) => {
      await client.query('INSERT INTO public.item VALUES ($1)', [10]);
      began();
      await held;
      return (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM public.item')).rows;
    });
    await begun;
    const closed = [db.close(), db.close()];
    release();
    expect(await work).toEqual([{ n: 1 }]);
    await Promise.all(closed);
    await db.close();
    // the earlier tests' pools are closed too
    await expect.poll(() => server.connectionCounts().inMemoryOpen).toBe(0);
    const check = createPool(server.url);
    expect((await check.query('DELETE FROM public.item RETURNING id')).rows).toEqual([{ id: 10 }]);
    await check.close();
  });

  it('fails a statement still waiting for the connection when its pool closes, instead of leaving it waiting for ever', async () => {
    const db = createPool(server.url);
    const { resolve: began, promise: begun } = withResolvers();
    const { resolve: release, promise: held } = withResolvers();
    const work = db.transaction(async (client) => {
      began();
      await held;
      return (await client.query<{ one: number }>('SELECT 1 AS one')).rows;
    });
    await begun;
    // the pool's one connection is taken: this statement waits for it
    const waiting = db.query('SELECT 2').catch((error: unknown) => error);
    const closed = db.close();
    const refused = await waiting;
    expect(refused).toBeInstanceOf(DatabaseUnavailableError);
    expect((refused as Error).message).toContain('closed');
    // the work that holds the connection finishes, then the pool is closed
    release();
    expect(await work).toEqual([{ one: 1 }]);
    await closed;
    expect(await db.query('SELECT 3').catch((error: unknown) => error)).toBeInstanceOf(DatabaseUnavailableError);
  });
});

describe.each(SERVERS)('closing an embedded server with connections in memory (%s)', (_name, startServer) => {
  const cleanup = useCleanup();

  it('fails the running and the waiting statements with DatabaseUnavailableError and leaves no connection open', async () => {
    const server = await startServer({ dataDir: join(await cleanup.tempDir(), 'pgdata') });
    const holder = cleanup.add(createPool(server.url));
    const waiter = cleanup.add(createPool(server.url));
    await waiter.query('SELECT 1'); // connected: what follows waits on the session, not on connecting

    const { transaction, release } = await heldTransaction(holder);
    // caught at once: it may fail while the server is still closing
    const waiting = waiter.query('SELECT 3').catch((e: unknown) => e);
    await Promise.all([server.close(), server.close()]);
    release();

    const [transactionError, waitingError] = await Promise.all([transaction, waiting]);
    expect(transactionError).toBeInstanceOf(DatabaseUnavailableError);
    expect(waitingError).toBeInstanceOf(DatabaseUnavailableError);
    expect(waitingError).toMatchObject({ kind: 'unavailable', address: `127.0.0.1:${server.port}/postgres` });
    expect(server.connectionCounts()).toMatchObject({ tcpAccepted: 0, inMemoryOpened: 2, inMemoryOpen: 0 });
    // a new connection finds the server gone, as over TCP
    expect(await waiter.query('SELECT 4').catch((e: unknown) => e)).toBeInstanceOf(DatabaseUnavailableError);
  });
});

describe('an embedded server in a worker thread', () => {
  const cleanup = useCleanup();

  it("runs a statement without holding up this thread's event loop, which PGlite in this thread does", async () => {
    const order = async (startServer: (options: EmbeddedPostgresOptions) => Promise<EmbeddedPostgres>): Promise<string[]> => {
      const server = await startServer({ dataDir: join(await cleanup.tempDir(), 'pgdata') });
      const db = createPool(server.url);
      try {
        await db.query('SELECT 1');
        const events: string[] = [];
        // a statement of about a second in PostgreSQL; the timer is due long before it ends, if this thread is free
        const statement = db.query('SELECT pg_sleep(1)').then(() => events.push('statement'));
        await new Promise((resolve) => setTimeout(resolve, 20)).then(() => events.push('timer'));
        await statement;
        return events;
      } finally {
        await db.close();
        await server.close();
      }
    };
    expect(await order(startEmbeddedPostgresInWorker)).toEqual(['timer', 'statement']);
    expect(await order(startEmbeddedPostgres)).toEqual(['statement', 'timer']);
  });

  it('holds its data directory: a second server on it, in a thread or in a worker, is refused until it closes', async () => {
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    const server = await startEmbeddedPostgresInWorker({ dataDir });
    await expect(startEmbeddedPostgresInWorker({ dataDir })).rejects.toBeInstanceOf(DataDirectoryInUseError);
    await expect(startEmbeddedPostgres({ dataDir })).rejects.toBeInstanceOf(DataDirectoryInUseError);
    await Promise.all([server.close(), server.close()]);
    const again = await startEmbeddedPostgresInWorker({ dataDir });
    const db = createPool(again.url);
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await db.close();
    await again.close();
  });

  it('ends its connections with DatabaseUnavailableError when its thread dies, refuses new ones, and still closes', async () => {
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    const warnings: string[] = [];
    const logger = { info: () => undefined, warn: (_fields: object, message: string) => warnings.push(message) };
    const entry = new URL('fixtures/dying-worker.mjs', import.meta.url);
    const server = await startEmbeddedPostgresInWorker({ dataDir, entry, logger });
    const first = cleanup.add(createPool(server.url));
    const { transaction, release } = await heldTransaction(first);
    // the second connection is the one the fixture's thread dies on
    const second = cleanup.add(createPool(server.url));
    expect(await second.query('SELECT 3').catch((error: unknown) => error)).toBeInstanceOf(DatabaseUnavailableError);
    release();
    expect(await transaction).toBeInstanceOf(DatabaseUnavailableError);
    // the thread's exit is told after its ports have closed
    await expect.poll(() => warnings).toContain('the embedded PostgreSQL worker thread ended while serving; its connections are closed');
    const third = cleanup.add(createPool(server.url));
    expect(await third.query('SELECT 4').catch((error: unknown) => error)).toBeInstanceOf(DatabaseUnavailableError);
    await Promise.all([server.close(), server.close()]);
    // the directory's lock went with the thread
    const again = await startEmbeddedPostgresInWorker({ dataDir });
    await again.close();
  });

  it('fails to start with EmbeddedPostgresStartError naming the directory and the reason, and gives the directory up', async () => {
    const first = await startEmbeddedPostgresInWorker({ dataDir: join(await cleanup.tempDir(), 'pgdata') });
    cleanup.add(first);
    const dataDir = join(await cleanup.tempDir(), 'pgdata');
    const error = await startEmbeddedPostgresInWorker({ dataDir, port: first.port }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EmbeddedPostgresStartError);
    expect(error).toMatchObject({ dataDir, kind: 'unavailable' });
    expect((error as EmbeddedPostgresStartError).reason).toContain(`cannot listen on 127.0.0.1:${first.port}`);
    const second = await startEmbeddedPostgresInWorker({ dataDir });
    await second.close();
  });
});
