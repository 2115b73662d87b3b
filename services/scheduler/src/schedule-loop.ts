import { type Logger } from '@loom/telemetry';
import { type Clock } from '@loom/foundation';
import { type CronSchedule } from './cron-schedule.js';
import { describeError } from './executor-port.js';
import { type FireKind, type ScheduleRecord, type SchedulerStateStore } from './state-store.js';

/** A fire found this much later than its time (the process was suspended or blocked) counts as missed. */
export const MISFIRE_MS = 60_000;

/** What a schedule's loop works with. */
export interface ScheduleLoopOptions {
  readonly workflow: string;
  readonly cron: CronSchedule;
  readonly clock: Clock;
  readonly store: SchedulerStateStore;
  readonly logger: Logger;
  /** Carries out one fire (claims it first). */
  readonly fire: (scheduledAt: Date, kind: FireKind) => Promise<void>;
  /** Make up for fires missed while no scheduler ran this schedule (at start and on taking over), per its catchUp. */
  readonly catchUp: boolean;
  /** The state of the schedule when the loop begins. */
  readonly record: ScheduleRecord | undefined;
  readonly maxCatchUpFires: number;
  readonly signal: AbortSignal;
}

/**
 * Runs one schedule until its signal aborts: first the fires missed since its state's handledUntil (catchUp NONE:
 * none; LATEST: the latest; ALL: each, at most maxCatchUpFires), then each cron time as it comes. A schedule seen for
 * the first time, or changed, counts from now.
 */
export async function runScheduleLoop(options: ScheduleLoopOptions): Promise<void> {
  const { clock, cron, signal } = options;
  let cursor = clock.now();
  const handledUntil = options.record?.handledUntil;
  if (handledUntil === undefined || !options.catchUp) {
    // a new or changed schedule counts from now, also should loom stop before its first fire
    await options.store.markHandled(options.workflow, cursor);
  } else if (options.record?.paused !== true) {
    await makeUpFor(options, handledUntil, cursor);
  }
  if (handledUntil !== undefined && handledUntil > cursor) cursor = handledUntil;
  while (!signal.aborted) {
    const next = cron.next(cursor);
    if (next === undefined) {
      options.logger.info({ workflow: options.workflow, cron: cron.schedule.cron }, 'schedule has no further fire times');
      return;
    }
    await clock.sleepUntil(next, signal);
    if (signal.aborted) return;
    const now = clock.now();
    if (now.getTime() - next.getTime() > MISFIRE_MS) {
      options.logger.warn(
        { workflow: options.workflow, due: next.toISOString(), lateMs: now.getTime() - next.getTime() },
        'schedule woke too late; the fires since count as missed',
      );
      await makeUpFor(options, new Date(next.getTime() - 1), now);
      cursor = now;
      continue;
    }
    await fireSafely(options, next, 'cron');
    cursor = next;
  }
}

/** The fires in (after, until], carried out as the schedule's catchUp says. */
async function makeUpFor(options: ScheduleLoopOptions, after: Date, until: Date): Promise<void> {
  const policy = options.cron.schedule.catchUp;
  const max = policy === 'ALL' ? options.maxCatchUpFires : 1;
  const missed = options.cron.between(after, until, max);
  const latest = missed.fires.at(-1);
  if (latest === undefined) return;
  const fields = { workflow: options.workflow, catchUp: policy, since: after.toISOString(), latest: latest.toISOString() };
  if (policy === 'NONE') {
    options.logger.info(fields, 'fires missed while no scheduler ran this schedule are not made up (catchUp NONE)');
    await options.store.markHandled(options.workflow, until);
    return;
  }
  if (missed.truncated && policy === 'ALL') {
    options.logger.warn(
      { ...fields, madeUp: missed.fires.length },
      `more fires were missed than loom.scheduler.catchUp.maxFires; only the latest ${missed.fires.length} are made up`,
    );
  } else {
    options.logger.info({ ...fields, madeUp: missed.fires.length }, 'making up for fires missed while no scheduler ran this schedule');
  }
  for (const fire of missed.fires) {
    if (options.signal.aborted) return;
    await fireSafely(options, fire, 'catch-up');
  }
  await options.store.markHandled(options.workflow, until);
}

async function fireSafely(options: ScheduleLoopOptions, scheduledAt: Date, kind: FireKind): Promise<void> {
  try {
    await options.fire(scheduledAt, kind);
  } catch (error) {
    // the claim could not be made (the state store is down): this fire is lost, the schedule goes on
    options.logger.error({ workflow: options.workflow, scheduledAt: scheduledAt.toISOString(), kind, error: describeError(error) }, 'schedule could not fire');
  }
}
