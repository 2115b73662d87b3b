import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScratchDatabase, queryOnce as sql, type ScratchDatabase } from '@loom/postgres/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LoomProcess, startLoomProcess } from './loom-process.js';
import { writeWorkflow } from './scheduled-workflows.js';
import { testDatabaseUrl } from '@loom/testing';

const adminUrl = testDatabaseUrl('cli: scheduler high availability');

const TOKEN = 'scheduler-ha-token-0123456789abcdef';
const POLL_MS = 200;

interface Logged {
  time: string;
  msg?: string;
  service?: string;
  identity?: string;
  body?: { scheduledAt?: string; schedule?: { kind?: string } };
}

const logOf = (loom: LoomProcess): Logged[] => loom.logLines.map((line) => JSON.parse(line) as Logged);

describe.runIf(adminUrl !== undefined)('two scheduler processes over PostgreSQL, the leader killed', () => {
  let database: ScratchDatabase | undefined;
  const processes: LoomProcess[] = [];
  let url: string;
  let services: LoomProcess;
  let name: string;

  beforeAll(async () => {
    database = await createScratchDatabase(adminUrl as string, 'loom_scheduler_ha');
    url = database.url;
    const root = join(mkdtempSync(join(tmpdir(), 'loom-ha-')), 'workflows');
    mkdirSync(root);
    // every fire of a running workflow under ALLOW is a trigger message, which the executor's logger logs once each
    name = writeWorkflow(root, 'Ticks', 1, {
      autoStart: true,
      schedule: { enabled: true, cron: '* * * * * *', timezone: 'UTC', overlap: 'ALLOW', catchUp: 'ALL' },
    });
    services = await startLoomProcess([
      '--services',
      'secrets,config-store,audit,executor',
      '--set',
      `loom.datasource.filesystemRoot=${root}`,
      '--set',
      `loom.auth.tokens.scheduler=${TOKEN}`,
      '--set',
      'loom.auth.allowAnonymous=true',
    ]);
    processes.push(services);
  });

  afterAll(async () => {
    for (const loom of processes) {
      if (loom.child.exitCode === null && loom.child.signalCode === null) loom.child.kill('SIGTERM');
      await loom.exited;
    }
    await database?.drop();
  });

  const scheduler = (): Promise<LoomProcess> =>
    startLoomProcess([
      '--services',
      'scheduler',
      '--set',
      `loom.services.config-store.address=${services.address}`,
      '--set',
      `loom.services.executor.address=${services.address}`,
      '--set',
      `loom.scheduler.database.url=${url}`,
      '--set',
      `loom.scheduler.lease.pollMs=${POLL_MS}`,
      '--set',
      'loom.scheduler.lease.timeoutMs=2000',
      '--set',
      `loom.auth.tokens.scheduler=${TOKEN}`,
      '--set',
      'loom.auth.allowAnonymous=true',
    ]);

  it('every fire in the window happens exactly once, and the survivor takes over within the poll interval', { timeout: 60_000 }, async () => {
    const pair = await Promise.all([scheduler(), scheduler()]);
    processes.push(...pair);
    const triggers = (): Logged[] => logOf(services).filter((entry) => entry.msg === 'message' && entry.body?.scheduledAt !== undefined);
    // the first leader fires a few times before it is killed
    await expect.poll(() => triggers().length, { timeout: 30_000 }).toBeGreaterThanOrEqual(3);

    const [lease] = await sql<{ holder: string }>(url, 'SELECT holder FROM public.scheduler_lease');
    const leaderPid = Number(lease?.holder.split(':')[1]);
    const leader = pair.find((loom) => loom.child.pid === leaderPid);
    const survivor = pair.find((loom) => loom !== leader);
    expect(leader).toBeDefined();
    const killedAt = Date.now();
    leader?.child.kill('SIGKILL');
    await leader?.exited;
    // polled, not waited for a fixed time: the survivor takes the lead, then fires until the window holds five instants
    const acquiredLine = (): Logged | undefined =>
      logOf(survivor as LoomProcess).find((entry) => entry.msg === 'scheduler lease acquired: this scheduler leads');
    await expect.poll(() => acquiredLine(), { timeout: 30_000 }).toBeDefined();
    const seenMs = (): number[] => triggers().map((entry) => Date.parse(entry.body?.scheduledAt as string));
    const firstMs = Math.min(...seenMs());
    await expect
      .poll(() => Math.max(...seenMs()), { timeout: 30_000 })
      .toBeGreaterThanOrEqual(Math.max(firstMs + 6000, Date.parse(acquiredLine()?.time ?? '') + 1000));
    // the window ends at the last fire seen, so a fire a loaded machine has not made yet is not counted missing
    const endedAt = Math.max(...seenMs()) + 1500;

    // the survivor took the lead after the kill, within the five seconds watched
    const acquired = acquiredLine();
    expect(acquired).toBeDefined();
    expect(Date.parse(acquired?.time ?? '')).toBeGreaterThanOrEqual(killedAt);
    expect(Date.parse(acquired?.time ?? '')).toBeLessThanOrEqual(endedAt);

    const seen = triggers().map((entry) => entry.body?.scheduledAt as string);
    const first = Math.min(...seen.map((at) => Date.parse(at)));
    const window: string[] = [];
    for (let second = first + 1000; second <= endedAt - 1500; second += 1000) window.push(new Date(second).toISOString());
    expect(window.length).toBeGreaterThanOrEqual(5);
    const missing = window.filter((at) => !seen.includes(at));
    const repeated = window.filter((at) => seen.filter((candidate) => candidate === at).length > 1);
    expect({ missing, repeated }).toEqual({ missing: [], repeated: [] });

    // both schedulers fired in the window (a fire due during the takeover, if any, as a catch-up fire)
    const holders = await sql<{ holder: string; n: string }>(
      url,
      `SELECT holder, count(*) AS n FROM public.scheduler_fire WHERE workflow = '${name}' GROUP BY holder`,
    );
    expect(holders.map((row) => row.holder).sort()).toEqual(
      [lease?.holder, logOf(survivor as LoomProcess).find((entry) => entry.msg === 'scheduler starting')?.identity].sort(),
    );
  });
});
