import { FailedPreconditionError, LoomError, NotFoundError } from '@loom/domain';

/** The scheduler knows no workflow of that name (it has no schedule and no autoStart, or does not exist). */
export class ScheduledWorkflowNotFoundError extends NotFoundError {
  constructor(name: string) {
    super('scheduled or autoStart workflow', name);
  }
}

/** The workflow has no usable schedule to pause, resume or fire. */
export class NoScheduleError extends FailedPreconditionError {}

/** A stored schedule that cannot run: a cron expression croner refuses, an unknown time zone, or one that never fires. */
export class InvalidScheduleError extends LoomError {
  readonly kind = 'failed-precondition';

  constructor(
    readonly cron: string,
    readonly timezone: string,
    readonly problem: string,
  ) {
    super(`schedule '${cron}' in ${timezone === '' ? 'no time zone' : timezone} cannot run: ${problem}`);
  }
}

/** The scheduler's state store cannot be used (its file is not a state file, or the database refuses). */
export class SchedulerStateError extends LoomError {
  readonly kind = 'failed-precondition';
}
