import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchedulerClient, WorkflowState } from '@loom/contracts';
import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, createClient } from '@loom/service-kit';
import { afterEach, describe, expect, it } from 'vitest';
import { type ExecutorHarness, instance, schedulerModule, startExecutor, workflowOf } from './harness.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the scheduler against the real executor', () => {
  it('restarts an autoStart run that went FAILED under its backoff, with the executor reason; the new run is RUNNING', async () => {
    const harness: ExecutorHarness = await startExecutor(['loom.scheduler.restart.initialDelayMs=100', 'loom.scheduler.restart.maxDelayMs=1000'], {
      modules: [schedulerModule],
    });
    cleanups.push(() => harness.stop());
    const scheduler = createClient(SchedulerClient, `127.0.0.1:${harness.running.port}`, { retry: false });
    cleanups.push(() => scheduler.close());
    const root = mkdtempSync(join(tmpdir(), 'loom-scheduler-restart-'));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const inbox = join(root, 'inbox');
    mkdirSync(inbox);

    const reader = 'Files_9e0f1a2b-3c4d-4e5f-8a6b-7c8d9e0f1a2b';
    const sink = 'Out_0f1a2b3c-4d5e-4f6a-9b7c-8d9e0f1a2b3c';
    const workflow = {
      ...workflowOf(
        'Restarted inbox_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5e',
        [instance(COMPONENT_KINDS.FILE_READER, reader, { directory: inbox }), instance(COMPONENT_KINDS.LOGGER, sink)],
        [[reader, sink]],
      ),
      autoStart: true,
    };
    const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
    const name = put.summary?.name ?? workflow.name;
    const status = () => call(harness.executor, 'getWorkflowStatus', { name }).catch(() => undefined);

    // the scheduler starts it (autoStart), with no call from the test
    await expect.poll(async () => (await status())?.state, { timeout: 30_000 }).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
    const first = (await status())?.runId ?? '';

    // the run dies outside a single message; while the directory is missing, restarts fail at start and back off
    rmSync(inbox, { recursive: true });
    await expect
      .poll(async () => (await call(scheduler, 'listSchedules', {})).schedules.find((schedule) => schedule.workflowName === name)?.restartAttempts, {
        timeout: 30_000,
      })
      .toBeGreaterThanOrEqual(2);
    mkdirSync(inbox);
    await expect
      .poll(
        async () => {
          const now = await status();
          return now?.state === WorkflowState.WORKFLOW_STATE_RUNNING && now.runId !== first;
        },
        { timeout: 30_000 },
      )
      .toBe(true);

    const reason = `component '${reader}' failed: ${reader}.options.directory: '${inbox}' is not an existing directory`;
    const log = harness.logged();
    const ended = log.findIndex((entry) => entry.msg === 'run ended' && entry.workflow === name && entry.state === 'FAILED');
    const restart = log.findIndex((entry) => entry.msg === 'workflow failed; restarting it after a backoff delay' && entry.workflow === name);
    const restarted = log.findIndex((entry, index) => index > restart && entry.msg === 'workflow started' && entry.workflow === name && entry.runId !== first);
    expect(log[ended]).toMatchObject({ runId: first, error: reason });
    expect(log[restart]).toMatchObject({ attempt: 1, reason: 'run failed', error: reason });
    expect([ended < restart, restart < restarted]).toEqual([true, true]);
    // the attempts that found the directory missing failed at start and were retried
    const delays = log
      .filter((entry) => entry.msg === 'workflow failed; restarting it after a backoff delay' && entry.workflow === name)
      .map((entry) => entry.delayMs as number);
    expect(delays.length).toBeGreaterThanOrEqual(2);
  });
});
