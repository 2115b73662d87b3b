import { FireOutcome, type ScheduleStatus } from '@loom/contracts';
import { type Schedule } from '@loom/domain';
import { scheduleToProto } from '@loom/domain/proto';
import { type CronSchedule } from './cron-schedule.js';
import { type FireResult } from './fire-runner.js';
import { type RunView } from './run-supervisor.js';
import { noFires, type FireOutcomeName, type ScheduleRecord } from './state-store.js';

/** What ListSchedules shows of one workflow. */
export interface StatusParts {
  readonly name: string;
  readonly autoStart: boolean;
  readonly schedule: Schedule | undefined;
  readonly cron: CronSchedule | undefined;
  readonly scheduleProblem: string;
  readonly record: ScheduleRecord | undefined;
  readonly run: RunView;
  readonly leaseHolder: string;
  readonly now: Date;
}

/** A workflow's ScheduleStatus: its schedule, pause, fire times, lease holder, run and restart attempts. */
export function scheduleStatus(parts: StatusParts): ScheduleStatus {
  const paused = parts.record?.paused ?? false;
  const fires = parts.schedule?.enabled === true && !paused ? parts.cron?.next(parts.now) : undefined;
  return {
    workflowName: parts.name,
    schedule: parts.schedule === undefined ? undefined : scheduleToProto(parts.schedule),
    paused,
    nextFireTime: fires,
    lastFireTime: parts.record?.lastFireTime,
    leaseHolder: parts.leaseHolder,
    autoStart: parts.autoStart,
    restartAttempts: parts.run.restartAttempts,
    nextRestartTime: parts.run.nextRestartAt,
    lastError: parts.run.lastError,
    scheduleProblem: parts.scheduleProblem,
    runState: parts.run.state,
    runId: parts.run.runId,
    fires: { ...(parts.record?.counts ?? noFires()) },
    fireQueued: parts.run.fireQueued,
  };
}

const OUTCOMES: Record<FireOutcomeName, FireOutcome> = {
  started: FireOutcome.FIRE_OUTCOME_STARTED,
  skipped: FireOutcome.FIRE_OUTCOME_SKIPPED,
  queued: FireOutcome.FIRE_OUTCOME_QUEUED,
  published: FireOutcome.FIRE_OUTCOME_PUBLISHED,
  failed: FireOutcome.FIRE_OUTCOME_FAILED,
};

/** A fire's result as TriggerNow answers it. */
export function triggerResponse(result: FireResult): { runId: string; outcome: FireOutcome; detail: string } {
  return { runId: result.runId, outcome: OUTCOMES[result.outcome], detail: result.detail };
}
