import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditModule } from '@loom/audit';
import { SchedulerClient } from '@loom/contracts';
import { createClient, type RunningServices } from '@loom/service-kit';
import { capturedLogger, serveForTest } from '@loom/service-kit/testing';
import { type Clock } from '@loom/foundation';
import { createSchedulerInstance, type FireEvent, type Scheduler, schedulerModule } from '../src/index.js';
import { FakeExecutor } from './fake-executor.js';
import { FakeStore } from './fake-store.js';

export { FakeExecutor, FakeStore };

/** A scheduler served with a fake config store and a fake executor on one loopback port, and what it did. */
export interface SchedulerHarness {
  readonly running: RunningServices;
  readonly client: SchedulerClient;
  readonly scheduler: Scheduler;
  /** Every fire, as the scheduler's observer saw it. */
  readonly fires: FireEvent[];
  readonly logLines: string[];
  /** Log lines parsed as JSON. */
  logged(): Record<string, unknown>[];
  stop(): Promise<void>;
}

/** What a harness runs with. */
export interface HarnessOptions {
  readonly store: FakeStore;
  readonly executor: FakeExecutor;
  /** The scheduler's state file; a fresh one when absent. */
  readonly stateFile?: string;
  readonly clock?: Clock;
  /** The restart supervisor's clock (real time when absent). */
  readonly restartClock?: Clock;
  readonly overrides?: readonly string[];
}

/** A fresh scheduler state file path in a temp directory. */
export function scratchStateFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'loom-scheduler-')), 'scheduler-state.json');
}

/** Serves the scheduler beside the fakes; restart delays are short (100 ms doubling to 2 s). */
export async function startScheduler(options: HarnessOptions): Promise<SchedulerHarness> {
  const { logger, lines: logLines } = capturedLogger();
  const fires: FireEvent[] = [];
  let scheduler: Scheduler | undefined;
  const module = {
    ...schedulerModule,
    create: (context: Parameters<typeof schedulerModule.create>[0]) =>
      createSchedulerInstance(context, {
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        ...(options.restartClock === undefined ? {} : { restartClock: options.restartClock }),
        observer: (event) => fires.push(event),
        built: (built) => (scheduler = built),
      }),
  };
  const running = await serveForTest(
    [options.store.module(), options.executor.module(), auditModule, module],
    [
      `loom.scheduler.stateFile=${options.stateFile ?? scratchStateFile()}`,
      `loom.security.audit.log.path=${join(mkdtempSync(join(tmpdir(), 'loom-scheduler-audit-')), 'audit.log')}`,
      'loom.scheduler.restart.initialDelayMs=100',
      'loom.scheduler.restart.maxDelayMs=2000',
      ...(options.overrides ?? []),
    ],
    { logger },
  );
  const client = createClient(SchedulerClient, `127.0.0.1:${running.port}`);
  return {
    running,
    client,
    scheduler: scheduler as unknown as Scheduler,
    fires,
    logLines,
    logged: () => logLines.map((line) => JSON.parse(line) as Record<string, unknown>),
    async stop() {
      client.close();
      await running.stop();
    },
  };
}
