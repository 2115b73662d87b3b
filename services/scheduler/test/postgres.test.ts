import { createPool, migrate } from '@loom/postgres';
import { createLogger } from '@loom/telemetry';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FireClaim, PostgresStateStore, schedulerMigrations } from '../src/index.js';
import { PostgresLeadership } from '../src/leadership.js';
import { storedName } from './fake-store.js';
import { FakeExecutor, FakeStore, type SchedulerHarness, startScheduler } from './harness.js';
import { testDatabaseUrl } from '@loom/testing';

const adminUrl = testDatabaseUrl('scheduler');

const silent = createLogger({ level: 'silent' });

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

describe.runIf(adminUrl !== undefined)('scheduler state and lease in PostgreSQL', () => {
  const database = `loom_scheduler_test_${process.pid}_${Date.now()}`;
  let url: string;

  beforeAll(async () => {
    await admin(adminUrl as string, `CREATE DATABASE ${database}`);
    const parsed = new URL(adminUrl as string);
    parsed.pathname = `/${database}`;
    url = parsed.toString();
  });
  afterAll(() => admin(adminUrl as string, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));

  it('lets each fire through once when two schedulers race for every one of them', async () => {
    const pools = [createPool(url), createPool(url)];
    await Promise.all(pools.map((db) => migrate(db, 'scheduler', schedulerMigrations)));
    const stores = pools.map((db, index) => new PostgresStateStore(db, `store ${index}`));
    const workflow = storedName('Raced');
    const claims = Array.from({ length: 50 }, (_, second): Date => new Date(Date.UTC(2026, 0, 1, 0, 0, second)));
    const won = await Promise.all(
      claims.flatMap((scheduledAt) =>
        stores.map(async (store, index) => {
          const claim: FireClaim = { workflow, scheduledAt, kind: 'cron', holder: `scheduler ${index}`, claimedAt: new Date() };
          return (await store.claim(claim)) ? scheduledAt.toISOString() : undefined;
        }),
      ),
    );
    const claimed = won.filter((entry) => entry !== undefined);
    // claims of one workflow are serialised on its row; a later second can win before an earlier one, which then
    // counts as handled already, so some fires are refused by both: never one claimed twice
    expect(new Set(claimed).size).toBe(claimed.length);
    const { rows } = await pools[0]!.query<{ n: string }>('SELECT count(*) AS n FROM public.scheduler_fire WHERE workflow = $1', [workflow]);
    expect(Number(rows[0]?.n)).toBe(claimed.length);
    await Promise.all(stores.map((store) => store.close()));
  });

  it('one of two schedulers leads; when its session dies the other takes over within the poll interval', async () => {
    const db = createPool(url);
    await migrate(db, 'scheduler', schedulerMigrations);
    const events: string[] = [];
    const make = (identity: string): PostgresLeadership =>
      new PostgresLeadership({ url, identity, pollMs: 100, timeoutMs: 2000, logger: silent, query: (text, params) => db.query(text, params) });
    const a = make('scheduler-a');
    const b = make('scheduler-b');
    a.start(
      () => events.push('a leads'),
      () => events.push('a lost'),
    );
    await expect.poll(() => a.isLeader).toBe(true);
    b.start(
      () => events.push('b leads'),
      () => events.push('b lost'),
    );
    // b has asked for the lock and been refused: its session's last statement is the try-lock, answered (idle)
    const lastStatementOfB = async (): Promise<string> =>
      (await db.query<{ query: string }>(`SELECT query FROM pg_stat_activity WHERE application_name = 'loom-scheduler-lease scheduler-b' AND state = 'idle'`))
        .rows[0]?.query ?? '';
    await expect.poll(lastStatementOfB).toContain('pg_try_advisory_lock');
    expect(b.isLeader).toBe(false);
    expect(await b.holder()).toBe('scheduler-a');

    // the leader's session ends as it would when its process is killed: the server frees the lock
    await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'loom-scheduler-lease scheduler-a%'`);
    // the standby polls every pollMs: it leads well within the poll's generous deadline
    await expect.poll(() => b.isLeader, { timeout: 5000, interval: 20 }).toBe(true);
    expect(await a.holder()).toBe('scheduler-b');
    expect(events).toEqual(['a leads', 'a lost', 'b leads']);
    await Promise.all([a.close(), b.close(), db.close()]);
  });

  describe('two schedulers over one database', () => {
    const harnesses: SchedulerHarness[] = [];
    afterAll(async () => {
      for (const harness of harnesses) await harness.stop().catch(() => undefined);
    });

    it('every fire in the window happens exactly once while the leader is cut off', { timeout: 20_000 }, async () => {
      const store = new FakeStore();
      const executor = new FakeExecutor();
      const name = storedName('Every second');
      executor.behave(name, { runMs: 0 });
      store.put(name, { schedule: { enabled: true, cron: '* * * * * *', timezone: 'UTC', overlap: 'SKIP', catchUp: 'ALL' } });
      const overrides = [`loom.scheduler.database.url=${url}`, 'loom.scheduler.lease.pollMs=200', 'loom.scheduler.lease.timeoutMs=2000'];
      const first = await startScheduler({ store, executor, overrides });
      harnesses.push(first);
      await expect.poll(async () => first.scheduler.list().then((list) => list[0]?.leaseHolder ?? ''), { timeout: 5000 }).not.toBe('');
      const second = await startScheduler({ store, executor, overrides });
      harnesses.push(second);
      const start = Date.now();
      // both run, the leader fires: two fires before its session is cut
      await expect.poll(() => first.fires.length + second.fires.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(2);

      const db = createPool(url);
      const { rows } = await db.query<{ holder: string }>('SELECT holder FROM public.scheduler_lease');
      const leader = rows[0]?.holder ?? '';
      await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [`loom-scheduler-lease ${leader}`.slice(0, 63)]);
      // the standby takes the lease (polled, not waited for a fixed time), then fires once more on its own
      const holder = async (): Promise<string> => (await db.query<{ holder: string }>('SELECT holder FROM public.scheduler_lease')).rows[0]?.holder ?? '';
      await expect.poll(holder, { timeout: 15_000 }).not.toBe(leader);
      // each has fired: the cut-off leader before, the standby once it leads (a fire of the old leader still in
      // flight after the cut is not the standby's)
      await expect.poll(() => Math.min(first.fires.length, second.fires.length), { timeout: 15_000 }).toBeGreaterThan(0);
      const end = Date.now();
      await db.close();

      expect(first.fires.length).toBeGreaterThan(0);
      expect(second.fires.length).toBeGreaterThan(0);
      const expected: string[] = [];
      for (let second = Math.ceil(start / 1000) * 1000 + 1000; second <= end - 1500; second += 1000) expected.push(new Date(second).toISOString());
      // every instant of the window has fired once a loaded machine caught up with it
      await expect.poll(() => expected.every((instant) => executor.runsOf(name).some((run) => run.scheduledAt === instant)), { timeout: 15_000 }).toBe(true);
      const fired = [...first.fires, ...second.fires].filter((fire) => fire.workflow === name);
      const started = executor.runsOf(name).map((run) => run.scheduledAt);
      for (const instant of expected) {
        expect(
          started.filter((scheduledAt) => scheduledAt === instant),
          instant,
        ).toHaveLength(1);
        expect(
          fired.filter((fire) => fire.scheduledAt.toISOString() === instant),
          instant,
        ).toHaveLength(1);
      }
    });
  });
});
