import { FireOutcome, type ScheduleStatus } from '@loom/contracts';
import { type Schedule, scheduleToProto, ValidationError } from '@loom/domain';
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

const STORED_NAME = /^(.*)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The workflow name part of a stored name `<workflow_name>_<uuid>`. */
export function baseName(stored: string): string {
  return STORED_NAME.exec(stored)?.[1] ?? stored;
}

/** The stored name a request means: itself, or the one stored name whose workflow name it is. */
export function resolveName(requested: string, known: Iterable<string>, field = 'workflow_name'): string | undefined {
  if (requested === '') throw ValidationError.of(field, 'is required', 'MISSING_FIELD');
  const names = [...known];
  if (names.includes(requested)) return requested;
  const matches = names.filter((name) => baseName(name) === requested);
  if (matches.length > 1) {
    throw ValidationError.of(field, `'${requested}' names ${matches.length} workflows (${matches.join(', ')}); give the stored name`, 'AMBIGUOUS_NAME');
  }
  return matches[0];
}
