import { status } from '@grpc/grpc-js';
import { FireOutcome, WorkflowState } from '@loom/contracts';
import { type Schedule } from '@loom/domain';
import { call } from '@loom/service-kit';
import { failure } from '@loom/service-kit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@loom/foundation';
import { NO_INLET_DETAIL } from '../src/index.js';
import { FakeExecutor, FakeStore, type SchedulerHarness, startScheduler } from './harness.js';
import { storedName } from './fake-store.js';

const harnesses: SchedulerHarness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.stop();
});

async function serve(store: FakeStore, executor: FakeExecutor, overrides: string[] = []): Promise<SchedulerHarness> {
  const harness = await startScheduler({ store, executor, overrides });
  harnesses.push(harness);
  return harness;
}

function everySecond(overlap: Schedule['overlap'], catchUp: Schedule['catchUp'] = 'NONE'): Schedule {
  return { enabled: true, cron: '* * * * * *', timezone: 'Europe/Berlin', overlap, catchUp };
}

describe('auto-start and restart', () => {
  it('starts every stored autoStart workflow without any call, and no other', async () => {
    const store = new FakeStore();
    const executor = new FakeExecutor();
    store.put(storedName('Ingest', 1), { autoStart: true });
    store.put(storedName('Ingest', 2), { autoStart: true });
    store.put(storedName('Manual', 3), { autoStart: false });
    const harness = await serve(store, executor);
    await expect.poll(() => executor.runs.length).toBe(2);
    expect(executor.runs.map((run) => run.name).sort()).toEqual([storedName('Ingest', 1), storedName('Ingest', 2)]);

    store.put(storedName('Late', 4), { autoStart: true });
    await expect.poll(() => executor.current(storedName('Late', 4))?.state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
    const { schedules } = await call(harness.client, 'listSchedules', {});
    expect(schedules.map((schedule) => [schedule.workflowName, schedule.autoStart, schedule.runState])).toEqual([
      [storedName('Ingest', 1), true, WorkflowState.WORKFLOW_STATE_RUNNING],
      [storedName('Ingest', 2), true, WorkflowState.WORKFLOW_STATE_RUNNING],
      [storedName('Late', 4), true, WorkflowState.WORKFLOW_STATE_RUNNING],
    ]);
  });

  // retries and restarts after a backoff delay: test/clock-driven.test.ts, on the ManualClock

  it('restarts a running workflow when a new version is pushed, unless its update policy is keep', async () => {
    const store = new FakeStore();
    const executor = new FakeExecutor();
    const restarted = storedName('Restarted', 1);
    const kept = storedName('Kept', 2);
    store.put(restarted, { autoStart: true });
    store.put(kept, { autoStart: true });
    await serve(store, executor, ['loom.scheduler.update.workflows.Kept=keep']);
    await expect.poll(() => executor.runs.length).toBe(2);

    store.put(restarted, { autoStart: true });
    store.put(kept, { autoStart: true });
    await expect.poll(() => executor.runsOf(restarted).length).toBe(2);
    expect(executor.runsOf(restarted)[0]?.state).toBe(WorkflowState.WORKFLOW_STATE_STOPPED);
    expect(executor.current(restarted)?.state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
    expect(executor.runsOf(kept)).toHaveLength(1);
    expect(executor.current(kept)?.state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
  });
});

describe('overlap: every second, each run taking 2.5 s', () => {
  // SKIP, QUEUE and ALLOW over time: test/clock-driven.test.ts, on the ManualClock

  it('ALLOW without an inlet skips, saying why', { timeout: 10_000 }, async () => {
    const store = new FakeStore();
    const executor = new FakeExecutor();
    const name = storedName('No inlet');
    store.put(name, { inlet: false, schedule: everySecond('ALLOW') });
    const harness = await serve(store, executor);
    await expect.poll(() => harness.fires.find((fire) => fire.outcome === 'skipped')?.detail, { timeout: 4000 }).toBe(NO_INLET_DETAIL);
    expect(executor.runsOf(name)).toHaveLength(1);
  });
});

describe('ListSchedules, PauseSchedule, ResumeSchedule, TriggerNow', () => {
  it('lists next fire times, pauses and resumes, and fires on request under the overlap policy', { timeout: 15_000 }, async () => {
    const store = new FakeStore();
    const executor = new FakeExecutor();
    const name = storedName('Nightly import');
    store.put(name, { schedule: { enabled: true, cron: '0 0 3 * * *', timezone: 'Europe/Berlin', overlap: 'SKIP', catchUp: 'LATEST' } });
    store.put(storedName('Unscheduled', 9), {});
    const harness = await serve(store, executor);
    await expect.poll(async () => (await call(harness.client, 'listSchedules', {})).schedules.length).toBe(1);

    const [listed] = (await call(harness.client, 'listSchedules', {})).schedules;
    expect(listed?.workflowName).toBe(name);
    expect(listed?.schedule?.cron).toBe('0 0 3 * * *');
    expect(listed?.leaseHolder).toMatch(/:\d+:[0-9a-f]{6}$/);
    const next = listed?.nextFireTime as Date;
    expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit', hour12: false }).format(next)).toBe('03:00');
    expect(next.getTime() - Date.now()).toBeLessThanOrEqual(24 * 3600 * 1000 + 3600 * 1000);

    const paused = await call(harness.client, 'pauseSchedule', { workflowName: 'Nightly import' });
    expect(paused.status?.paused).toBe(true);
    expect(paused.status?.nextFireTime).toBeUndefined();

    const triggered = await call(harness.client, 'triggerNow', { workflowName: name });
    expect(triggered.outcome).toBe(FireOutcome.FIRE_OUTCOME_STARTED);
    expect(triggered.runId).toBe(executor.current(name)?.runId);
    expect(executor.current(name)?.kind).toBe('manual');
    const again = await call(harness.client, 'triggerNow', { workflowName: name });
    expect(again.outcome).toBe(FireOutcome.FIRE_OUTCOME_SKIPPED);
    expect(again.detail).toContain('SKIP: the previous run');

    const resumed = await call(harness.client, 'resumeSchedule', { workflowName: name });
    expect(resumed.status?.paused).toBe(false);
    expect(resumed.status?.fires).toMatchObject({ started: 1, skipped: 1 });

    expect((await failure(call(harness.client, 'pauseSchedule', { workflowName: 'No such workflow' }))).code).toBe(status.NOT_FOUND);
    expect((await failure(call(harness.client, 'triggerNow', { workflowName: '' }))).code).toBe(status.INVALID_ARGUMENT);
    store.put(storedName('Auto only', 5), { autoStart: true });
    await expect.poll(() => executor.runsOf(storedName('Auto only', 5)).length).toBe(1);
    const noSchedule = await failure(call(harness.client, 'triggerNow', { workflowName: 'Auto only' }));
    expect(noSchedule.code).toBe(status.FAILED_PRECONDITION);
    expect(noSchedule.details).toContain('has no schedule');
  });

  it('a paused schedule does not fire; resumed, it fires again without making up the pause', async () => {
    // time moves by hand: the fires due while paused pass without any waiting
    const store = new FakeStore();
    const executor = new FakeExecutor();
    const name = storedName('Pausable');
    executor.behave(name, { runMs: 0 });
    store.put(name, { schedule: everySecond('SKIP', 'ALL') });
    const clock = new ManualClock(new Date('2026-01-01T00:00:00.500Z'));
    const harness = await startScheduler({ store, executor, clock });
    harnesses.push(harness);
    await clock.untilWaiting(1);
    await clock.advanceTo(new Date('2026-01-01T00:00:01.500Z'), 1);
    await expect.poll(() => executor.runsOf(name).length).toBe(1);

    await call(harness.client, 'pauseSchedule', { workflowName: name });
    await clock.advanceTo(new Date('2026-01-01T00:00:05.500Z'), 1);
    expect(executor.runsOf(name).map((run) => run.scheduledAt)).toEqual(['2026-01-01T00:00:01.000Z']);
    expect(harness.fires.filter((fire) => fire.outcome === 'started').map((fire) => fire.scheduledAt.toISOString())).toEqual(['2026-01-01T00:00:01.000Z']);

    await call(harness.client, 'resumeSchedule', { workflowName: name });
    await clock.advanceTo(new Date('2026-01-01T00:00:06.500Z'), 1);
    // the fires of 00:02 … 00:05 are not made up (catch-up ALL concerns fires missed while stopped, not paused)
    await expect.poll(() => executor.runsOf(name).map((run) => run.scheduledAt)).toEqual(['2026-01-01T00:00:01.000Z', '2026-01-01T00:00:06.000Z']);
    expect(executor.runsOf(name).every((run) => run.kind === 'cron')).toBe(true);
  });
});
