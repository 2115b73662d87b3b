import { afterEach, describe, expect, it } from 'vitest';
import { WorkerJobError, WorkerPool } from '../src/index.js';

type Job = { op: 'echo'; value: number } | { op: 'throw'; message: string } | { op: 'crash' } | { op: 'hang' };
type Result = { value: number; threadId: number };

// the fixture imports @loom/foundation/worker, which Node resolves to the built dist: the test target builds first
const entry = new URL('./fixtures/test-worker.mjs', import.meta.url);
const pools: WorkerPool<Job, Result>[] = [];

function pool(size: number, jobTimeMs?: number): WorkerPool<Job, Result> {
  const created = new WorkerPool<Job, Result>({ name: 'test', entry, size, ...(jobTimeMs === undefined ? {} : { jobTimeMs }) });
  pools.push(created);
  return created;
}

const never = new AbortController().signal;

/** Rejection of a job, typed. */
async function failureOf(promise: Promise<unknown>): Promise<WorkerJobError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(WorkerJobError);
  return error as WorkerJobError;
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((each) => each.close()));
});

describe('WorkerPool', () => {
  it('answers concurrent jobs each with its own result, on every thread of its size', async () => {
    const workers = pool(2);
    const results = await Promise.all(Array.from({ length: 6 }, (_, index) => workers.run({ op: 'echo', value: index }, never)));
    expect(results.map((result) => result.value)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(results.map((result) => result.threadId)).size).toBe(2);
    expect(workers.workers).toBe(2);
  });

  it('gives what a job threw to that job only, with its name and fields, and keeps the worker', async () => {
    const workers = pool(1);
    const first = await workers.run({ op: 'echo', value: 1 }, never);
    const error = await failureOf(workers.run({ op: 'throw', message: 'no text' }, never));
    expect(error).toMatchObject({
      reason: 'failed',
      kind: 'invalid-argument',
      retryable: false,
      errorName: 'JobRefusedError',
      message: 'no text',
      details: { field: 'text' },
    });
    const after = await workers.run({ op: 'echo', value: 2 }, never);
    expect(after).toEqual({ value: 2, threadId: first.threadId });
  });

  it('fails only the job whose worker crashed, and replaces the worker for the next', async () => {
    const workers = pool(1);
    const first = await workers.run({ op: 'echo', value: 1 }, never);
    const crashed = workers.run({ op: 'crash' }, never);
    const queued = workers.run({ op: 'echo', value: 2 }, never);
    expect(await failureOf(crashed)).toMatchObject({ reason: 'crashed', kind: 'resource-exhausted', retryable: false });
    const after = await queued;
    expect(after.value).toBe(2);
    expect(after.threadId).not.toBe(first.threadId);
    expect(workers.workers).toBe(1);
  });

  it('ends a job past its time, and a job its caller aborts, on a fresh worker each', async () => {
    const workers = pool(1, 100);
    expect(await failureOf(workers.run({ op: 'hang' }, never))).toMatchObject({ reason: 'timed_out', kind: 'deadline-exceeded', retryable: false });
    const controller = new AbortController();
    const aborted = workers.run({ op: 'hang' }, controller.signal);
    const reason = new Error('caller gone');
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    expect((await workers.run({ op: 'echo', value: 3 }, never)).value).toBe(3);
  });

  it('closes once: jobs under way and waiting fail as closed, a second close waits for the first, later jobs are refused', async () => {
    const workers = pool(1);
    const running = failureOf(workers.run({ op: 'hang' }, never));
    const waiting = failureOf(workers.run({ op: 'echo', value: 1 }, never));
    const first = workers.close();
    const second = workers.close();
    await Promise.all([first, second]);
    expect(workers.state).toBe('closed');
    expect(await running).toMatchObject({ reason: 'closed', kind: 'unavailable', retryable: true });
    expect(await waiting).toMatchObject({ reason: 'closed' });
    expect(await failureOf(workers.run({ op: 'echo', value: 2 }, never))).toMatchObject({ reason: 'closed' });
    expect(workers.workers).toBe(0);
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new WorkerPool({ name: 'test', entry, size: 0 })).toThrow(/size must be a positive integer/);
  });
});
