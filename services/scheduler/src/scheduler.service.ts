import { SchedulerService } from '@loom/contracts';
import { AuditAppender, type AsyncImplementation, type LoomServer, type ServiceContext, type ServiceInstance, type ServiceModule } from '@loom/service-kit';
import { type Clock } from '@loom/foundation';
import { type FireEvent } from './fire-runner.js';
import { Scheduler } from './scheduler.js';
import { triggerResponse } from './schedule-status.js';
import { openSchedulerStorage } from './storage.js';

/** The loom.v1.Scheduler handlers over a scheduler. */
export function schedulerImplementation(scheduler: Scheduler): AsyncImplementation<typeof SchedulerService> {
  return {
    async listSchedules() {
      return { schedules: await scheduler.list() };
    },
    async pauseSchedule(request, context) {
      return { status: await scheduler.setPaused(request.workflowName, true, context.identity) };
    },
    async resumeSchedule(request, context) {
      return { status: await scheduler.setPaused(request.workflowName, false, context.identity) };
    },
    async triggerNow(request) {
      return triggerResponse(await scheduler.trigger(request.workflowName));
    },
  };
}

/** How often the scheduler looks whether its server listens yet. */
const LISTEN_POLL_MS = 10;

/**
 * Resolves once the server listens (true), or false when it stops first. The service kit builds every service before
 * the server binds its port, and calls to this process need that port; it offers no hook, so the state is polled.
 */
async function listening(server: LoomServer): Promise<boolean> {
  while (server.state === 'starting') await new Promise((resolve) => setTimeout(resolve, LISTEN_POLL_MS));
  return server.state === 'running';
}

/** What a test may replace: the schedules' and the restarts' clocks, an observer of fires, the jitter's randomness. */
export interface SchedulerTestHooks {
  readonly clock?: Clock;
  readonly restartClock?: Clock;
  readonly observer?: (event: FireEvent) => void;
  readonly random?: () => number;
  /** Receives the scheduler once it is built. */
  readonly built?: (scheduler: Scheduler) => void;
}

/** Builds the scheduler of a process: its state and lease, and its RPCs; it starts once the server listens. */
export async function createSchedulerInstance(
  { config, logger, clients }: ServiceContext<'scheduler'>,
  hooks: SchedulerTestHooks = {},
): Promise<ServiceInstance> {
  const { store, leadership } = await openSchedulerStorage(config, logger);
  let appender: AuditAppender | undefined;
  const scheduler = new Scheduler({
    config: config.scheduler,
    logger,
    store,
    leadership,
    workflowStore: () => clients.get('config-store'),
    executor: () => clients.get('executor'),
    audit: () => (appender ??= new AuditAppender(clients.get('audit'))),
    ...(hooks.clock === undefined ? {} : { clock: hooks.clock }),
    ...(hooks.restartClock === undefined ? {} : { restartClock: hooks.restartClock }),
    ...(hooks.observer === undefined ? {} : { observer: hooks.observer }),
    ...(hooks.random === undefined ? {} : { random: hooks.random }),
  });
  hooks.built?.(scheduler);
  return {
    addToServer(server) {
      server.addService('loom.v1.Scheduler', SchedulerService, schedulerImplementation(scheduler));
      // calls to this process fail once its server drains: the scheduler stops acting when shutdown begins
      server.shutdownSignal.addEventListener('abort', () => scheduler.stop(), { once: true });
      void listening(server).then((running) => {
        if (running && !server.shutdownSignal.aborted) scheduler.start();
      });
    },
    close: () => scheduler.close(),
  };
}

/** loom.v1.Scheduler, deployable alone (`loom serve --services scheduler`) or with the others. */
export const schedulerModule: ServiceModule<'scheduler'> = {
  name: 'scheduler',
  fullName: 'loom.v1.Scheduler',
  configSections: ['scheduler'],
  create: (context) => createSchedulerInstance(context),
};
