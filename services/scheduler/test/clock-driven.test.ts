import { WorkflowState } from '@loom/contracts';
import { type Schedule } from '@loom/domain';
import { call } from '@loom/service-kit';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@loom/foundation';
import { FileStateStore } from '../src/index.js';
import { FakeExecutor, FakeStore, type SchedulerHarness, scratchStateFile, startScheduler } from './harness.js';
import { storedName } from './fake-store.js';

// Time moves by hand here (ManualClock): a loop wakes at the cron time it asked for, with no waiting.

const harnesses: SchedulerHarness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.stop();
});

function schedule(cron: string, catchUp: Schedule['catchUp'] = 'NONE', timezone = 'Europe/Berlin'): Schedule {
  return { enabled: true, cron, timezone, overlap: 'SKIP', catchUp };
}

const iso = (dates: readonly Date[]): string[] => dates.map((date) => date.toISOString());

describe('catch-up of fires missed while the scheduler was stopped', () => {
  it('stopped for five fires: LATEST makes up one, ALL five, NONE none', async () => {
    const store = new FakeStore();
    const executor = new FakeExecutor();
    const names = { LATEST: storedName('Latest'), ALL: storedName('All'), NONE: storedName('None') } as const;
    for (const [catchUp, name] of Object.entries(names) as [Schedule['catchUp'], string][]) {
      executor.behave(name, { runMs: 0 });
      store.put(name, { schedule: schedule('* * * * * *', catchUp, 'UTC') });
    }
    const stateFile = scratchStateFile();
    const clock = new ManualClock(new Date('2026-01-01T00:00:00.500Z'));

    const first = await startScheduler({ store, executor, stateFile, clock });
    await clock.untilWaiting(3);
    await clock.advanceTo(new Date('2026-01-01T00:00:02.500Z'), 3);
    const before = first.fires.map((fire) => [fire.workflow, fire.scheduledAt.toISOString(), fire.kind]);
    expect(before).toHaveLength(6);
    await first.stop();

    // down while 00:03 … 00:07 pass: five fires missed
    await clock.advanceTo(new Date('2026-01-01T00:00:07.500Z'), 0);
    const second = await startScheduler({ store, executor, stateFile, clock });
    harnesses.push(second);
    await clock.untilWaiting(3);
    const caughtUp = (name: string): string[] =>
      second.fires.filter((fire) => fire.workflow === name && fire.kind === 'catch-up').map((fire) => fire.scheduledAt.toISOString());
    expect(caughtUp(names.LATEST)).toEqual(['2026-01-01T00:00:07.000Z']);
    expect(caughtUp(names.ALL)).toEqual(['03', '04', '05', '06', '07'].map((second) => `2026-01-01T00:00:${second}.000Z`));
    expect(caughtUp(names.NONE)).toEqual([]);
    expect(second.fires.every((fire) => fire.outcome === 'started')).toBe(true);
    const missedLog = second.logged().find((entry) => entry.workflow === names.NONE && entry.catchUp === 'NONE');
    expect(missedLog?.msg).toMatch(/not made up/);

    // and then on as usual, each from 00:08 on
    await clock.advanceTo(new Date('2026-01-01T00:00:08.500Z'), 3);
    for (const name of Object.values(names)) {
      expect(second.fires.filter((fire) => fire.workflow === name && fire.kind === 'cron').map((fire) => fire.scheduledAt.toISOString())).toEqual([
        '2026-01-01T00:00:08.000Z',
      ]);
    }
  });
});

describe('a fire claimed by a scheduler that stopped before it acted', () => {
  it('is carried out by the next scheduler, once', async () => {
    const store = new FakeStore();
    const executor = new FakeExecutor();
    const name = storedName('Interrupted');
    store.put(name, { schedule: schedule('0 0 * * * *', 'NONE', 'UTC') });
    const stateFile = scratchStateFile();
    const clock = new ManualClock(new Date('2026-01-01T10:00:00.200Z'));
    const state = await FileStateStore.open(stateFile);
    const claim = {
      workflow: name,
      scheduledAt: new Date('2026-01-01T10:00:00Z'),
      kind: 'cron' as const,
      holder: 'a scheduler that died',
      claimedAt: new Date('2026-01-01T10:00:00.010Z'),
    };
    expect(await state.claim(claim)).toBe(true);
    await state.close();

    const harness = await startScheduler({ store, executor, stateFile, clock });
    harnesses.push(harness);
    await expect.poll(() => executor.runsOf(name).map((run) => run.scheduledAt)).toEqual(['2026-01-01T10:00:00.000Z']);
    await expect.poll(() => harness.fires.map((fire) => [fire.scheduledAt.toISOString(), fire.outcome])).toEqual([['2026-01-01T10:00:00.000Z', 'started']]);
    expect(await (await FileStateStore.open(stateFile)).unfinished()).toEqual([]);
  });
});

describe('time zones', () => {
  async function firesBetween(crons: Record<string, string>, from: string, to: string): Promise<Record<string, string[]>> {
    const store = new FakeStore();
    const executor = new FakeExecutor();
    for (const [base, cron] of Object.entries(crons)) {
      executor.behave(storedName(base), { runMs: 0 });
      store.put(storedName(base), { schedule: schedule(cron) });
    }
    const clock = new ManualClock(new Date(from));
    const harness = await startScheduler({ store, executor, clock });
    harnesses.push(harness);
    const loops = Object.keys(crons).length;
    await clock.untilWaiting(loops);
    await clock.advanceTo(new Date(to), loops);
    // every fire started a run whose StartWorkflow named that fire
    expect(executor.runs.map((run) => run.scheduledAt).sort()).toEqual(harness.fires.map((fire) => fire.scheduledAt.toISOString()).sort());
    return Object.fromEntries(
      Object.keys(crons).map((base) => [base, iso(harness.fires.filter((fire) => fire.workflow === storedName(base)).map((fire) => fire.scheduledAt))]),
    );
  }

  it('fires at the right instants when Europe/Berlin springs forward (02:00 → 03:00 on 29 March 2026)', async () => {
    const fires = await firesBetween({ Daily: '0 30 2 * * *', Halfhourly: '0 */30 * * * *' }, '2026-03-28T23:10:00Z', '2026-03-29T02:10:00Z');
    // 02:30 does not exist that night: the fixed-time job runs at the first valid time after the gap, 03:00 CEST
    expect(fires.Daily).toEqual(['2026-03-29T01:00:00.000Z']);
    // the interval job skips the gap: 00:30, 01:00, 01:30 CET, then 03:00, 03:30, 04:00 CEST
    expect(fires.Halfhourly).toEqual([
      '2026-03-28T23:30:00.000Z',
      '2026-03-29T00:00:00.000Z',
      '2026-03-29T00:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-29T01:30:00.000Z',
      '2026-03-29T02:00:00.000Z',
    ]);
  });

  it('fires at the right instants when Europe/Berlin falls back (03:00 → 02:00 on 25 October 2026)', async () => {
    const fires = await firesBetween({ Daily: '0 30 2 * * *', Halfhourly: '0 */30 * * * *' }, '2026-10-24T23:10:00Z', '2026-10-25T03:10:00Z');
    // 02:30 happens twice; the fixed-time job runs once, at the first (CEST)
    expect(fires.Daily).toEqual(['2026-10-25T00:30:00.000Z']);
    // the interval job runs at both 02:00 and both 02:30
    expect(fires.Halfhourly).toEqual([
      '2026-10-24T23:30:00.000Z',
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:30:00.000Z',
      '2026-10-25T02:00:00.000Z',
      '2026-10-25T02:30:00.000Z',
      '2026-10-25T03:00:00.000Z',
    ]);
  });
});

describe('overlap policies', () => {
  it('SKIP never overlaps, QUEUE starts as the previous run ends, ALLOW sends trigger messages into the running one', async () => {
    const store = new FakeStore();
    const clock = new ManualClock(new Date('2026-01-01T00:00:00.500Z'));
    const executor = new FakeExecutor(() => clock.now().getTime());
    const names = { SKIP: storedName('Skip'), QUEUE: storedName('Queue'), ALLOW: storedName('Allow') } as const;
    for (const [overlap, name] of Object.entries(names) as [Schedule['overlap'], string][]) {
      // runs last until the test ends them
      store.put(name, { inlet: true, schedule: { enabled: true, cron: '* * * * * *', timezone: 'UTC', overlap, catchUp: 'NONE' } });
    }
    const harness = await startScheduler({ store, executor, stateFile: scratchStateFile(), clock });
    harnesses.push(harness);
    await clock.untilWaiting(3);
    const outcomes = (name: string): string[] => harness.fires.filter((fire) => fire.workflow === name).map((fire) => fire.outcome);

    // 00:01 starts each; 00:02 and 00:03 come while the runs go on
    await clock.advanceTo(new Date('2026-01-01T00:00:03.500Z'), 3);
    await expect.poll(() => harness.fires.length).toBe(9);
    expect(outcomes(names.SKIP)).toEqual(['started', 'skipped', 'skipped']);
    expect(outcomes(names.QUEUE)).toEqual(['started', 'queued', 'skipped']); // at most one fire waits
    expect(outcomes(names.ALLOW)).toEqual(['started', 'published', 'published']);
    for (const name of Object.values(names)) expect(executor.runsOf(name)).toHaveLength(1);

    // ALLOW: the fires during the run reached the running workflow as trigger messages, one id each
    const published = executor.publishes.filter((publish) => publish.name === names.ALLOW);
    expect(published.map((publish) => publish.body['scheduledAt'])).toEqual(['2026-01-01T00:00:02.000Z', '2026-01-01T00:00:03.000Z']);
    expect(published[0]?.body).toMatchObject({ schedule: { cron: '* * * * * *', timezone: 'UTC', kind: 'cron' } });
    expect(new Set(published.map((publish) => publish.messageId)).size).toBe(2);
    expect(executor.publishes.filter((publish) => publish.name !== names.ALLOW)).toEqual([]);

    // the runs end at 00:03.5: QUEUE starts its queued fire at once (the clock has not moved), SKIP waits for 00:04
    for (const name of Object.values(names)) executor.complete(name);
    await expect.poll(() => executor.runsOf(names.QUEUE).length).toBe(2);
    expect(executor.runsOf(names.SKIP)).toHaveLength(1);
    const [first, queued] = executor.runsOf(names.QUEUE);
    expect(queued?.startedAt).toBe(first?.endedAt);

    await clock.advanceTo(new Date('2026-01-01T00:00:04.500Z'), 3);
    await expect.poll(() => executor.runsOf(names.SKIP).length).toBe(2);
    const [skipFirst, skipSecond] = executor.runsOf(names.SKIP);
    expect(skipSecond?.startedAt).toBeGreaterThan(skipFirst?.endedAt ?? Infinity);
    expect(skipSecond?.scheduledAt).toBe('2026-01-01T00:00:04.000Z');
  });
});

describe('restarts after a backoff delay', () => {
  const RESTARTING = 'workflow failed; restarting it after a backoff delay';

  async function start(executorSetup: (executor: FakeExecutor, name: string) => void, base: string) {
    const store = new FakeStore();
    const clock = new ManualClock(new Date('2026-01-01T00:00:00.000Z'));
    const executor = new FakeExecutor(() => clock.now().getTime());
    const name = storedName(base);
    executorSetup(executor, name);
    store.put(name, { autoStart: true });
    const harness = await startScheduler({ store, executor, stateFile: scratchStateFile(), restartClock: clock });
    harnesses.push(harness);
    return { clock, executor, name, harness };
  }

  it('retries a workflow that throws at start with growing delays, attempts in ListSchedules and the log', async () => {
    const { clock, executor, name, harness } = await start((executor, name) => executor.behave(name, { failStarts: 4 }), 'Webhook intake');
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      // between two attempts the scheduler waits on the clock, and the schedule shows when it tries again
      await clock.untilWaiting(1);
      expect(executor.refused).toHaveLength(attempt);
      const wakeAt = clock.nextWakeAt as Date;
      const [status] = (await call(harness.client, 'listSchedules', {})).schedules;
      expect(status).toMatchObject({ restartAttempts: attempt, nextRestartTime: wakeAt });
      expect(status?.lastError).toContain('EADDRINUSE');
      delays.push(wakeAt.getTime() - clock.now().getTime());
      await clock.advanceTo(wakeAt, 0);
    }
    await expect.poll(() => executor.current(name)?.state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
    expect(executor.current(name)?.startedAt).toBe(clock.now().getTime());
    // 100, 200, 400, 800 ms less up to 20 % jitter: each longer than the one before
    expect(delays[0]).toBeGreaterThanOrEqual(80);
    for (let index = 1; index < delays.length; index++) expect(delays[index]).toBeGreaterThan(delays[index - 1] as number);

    const retries = harness.logged().filter((entry) => entry.msg === RESTARTING);
    expect(retries.map((entry) => entry.attempt)).toEqual([1, 2, 3, 4]);
    expect(retries.map((entry) => entry.delayMs)).toEqual(delays);
  });

  it('restarts an autoStart run that FAILED after a backoff delay, and starts again at once what a restarted executor lost', async () => {
    const { clock, executor, name, harness } = await start(() => undefined, 'Long running');
    await expect.poll(() => executor.current(name)?.state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);

    executor.fail(name);
    await clock.untilWaiting(1);
    const wakeAt = clock.nextWakeAt as Date;
    expect(wakeAt.getTime() - clock.now().getTime()).toBeGreaterThanOrEqual(80); // 100 ms less jitter
    expect(executor.runsOf(name)).toHaveLength(1); // nothing before the delay is over
    await clock.advanceTo(wakeAt, 0);
    await expect.poll(() => executor.runsOf(name).length).toBe(2);
    expect(executor.current(name)?.startedAt).toBe(wakeAt.getTime());
    expect(harness.logged().find((entry) => entry.msg === RESTARTING)).toMatchObject({ workflow: name, attempt: 1, reason: 'run failed' });

    // the executor restarts once the scheduler follows the new run: a restart before its WatchRun stream opened would
    // leave that stream to find no run and wait on the test's clock, which this test does not move
    await expect.poll(() => executor.isWatched(executor.current(name))).toBe(true);
    executor.restart();
    await expect.poll(() => executor.runsOf(name).length).toBe(1);
    expect(harness.logged().filter((entry) => entry.msg === 'workflow started' && entry.reason === 'the executor no longer has the run')).toHaveLength(1);
  });
});
