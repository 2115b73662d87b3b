import { type Schedule } from '@loom/domain';
import { type Logger } from '@loom/telemetry';
import { type Clock } from '@loom/foundation';
import { describeError, type ExecutorPort } from './executor-port.js';
import { type RunSupervisor } from './run-supervisor.js';
import { type FireClaim, type FireKind, type FireOutcomeName, type SchedulerStateStore, type UnfinishedFire } from './state-store.js';

/** What a fire needs of its workflow. */
export interface FireTarget {
  readonly name: string;
  readonly schedule: Schedule;
  /** The first inlet, for ALLOW. */
  readonly inlet: string | undefined;
}

/** How one fire ended. */
export interface FireResult {
  readonly outcome: FireOutcomeName;
  readonly runId: string;
  /** Why it was skipped or failed, or the id of the trigger message. */
  readonly detail: string;
}

/** A fire and its result, for whoever watches fires (tests, metrics). */
export interface FireEvent extends FireResult {
  readonly workflow: string;
  readonly scheduledAt: Date;
  readonly kind: FireKind;
  readonly firedAt: Date;
}

/** What the fire runner works with. */
export interface FireRunnerOptions {
  readonly store: SchedulerStateStore;
  readonly supervisor: RunSupervisor;
  readonly executor: ExecutorPort;
  readonly logger: Logger;
  /** This scheduler's identity, recorded with each claim. */
  readonly holder: string;
  /** The schedules' clock (firedAt). */
  readonly clock: Clock;
  readonly observer?: (event: FireEvent) => void;
}

/** What a running workflow with ALLOW but without an inlet does with a fire, as its log and status say. */
export const NO_INLET_DETAIL =
  'ALLOW: the previous run is still going and the workflow has no inlet to take a trigger message (the executor keeps one run per workflow)';

/**
 * Carries out fires. A fire is claimed in the state store first, so it acts once across schedulers and restarts. Then:
 * a workflow that is not running is started. One whose previous run is still going (STARTING, RUNNING or STOPPING)
 * follows the overlap policy: SKIP does nothing; QUEUE starts it once that run ends (STOPPED or FAILED), one fire
 * queued at most; ALLOW sends the trigger message `{scheduledAt, firedAt, schedule}` into its first inlet, since the
 * executor keeps one run per workflow, and without an inlet is skipped.
 */
export class FireRunner {
  /** Fires this scheduler is carrying out, by workflow and time. */
  private readonly inFlight = new Set<string>();

  constructor(private readonly options: FireRunnerOptions) {}

  /** Claims and carries out a fire; undefined when it was not claimed (done before, or the schedule is paused). */
  async fire(target: FireTarget, scheduledAt: Date, kind: FireKind): Promise<FireResult | undefined> {
    const claim: FireClaim = { workflow: target.name, scheduledAt, kind, holder: this.options.holder, claimedAt: this.options.clock.now() };
    this.inFlight.add(keyOf(claim));
    try {
      if (!(await this.options.store.claim(claim))) return undefined;
      return await this.act(target, claim);
    } finally {
      this.inFlight.delete(keyOf(claim));
    }
  }

  /** Carries out a claimed fire. */
  async act(target: FireTarget, claim: FireClaim): Promise<FireResult> {
    const { supervisor } = this.options;
    let result: FireResult;
    this.inFlight.add(keyOf(claim));
    try {
      try {
        result = await supervisor.exclusive(target.name, () => this.decide(target, claim));
      } catch (error) {
        result = { outcome: 'failed', runId: '', detail: describeError(error) };
      }
      await this.settle(target, claim, result);
      return result;
    } finally {
      this.inFlight.delete(keyOf(claim));
    }
  }

  /**
   * Finishes a fire claimed and not finished, by a scheduler that stopped or by this one before it lost the lease: a
   * run that began after the claim (allowing 1 s between clocks) is the one it started; otherwise it acts now.
   */
  async adopt(target: FireTarget | undefined, fire: UnfinishedFire): Promise<void> {
    if (this.inFlight.has(keyOf(fire))) return;
    try {
      if (target === undefined) {
        await this.options.store.settle(fire, 'failed', { detail: 'the workflow or its schedule is gone' });
        return;
      }
      const run = fire.state === 'claimed' ? await this.options.supervisor.currentRun(fire.workflow) : undefined;
      if (run?.startedAt !== undefined && run.startedAt.getTime() >= fire.claimedAt.getTime() - 1000) {
        await this.options.store.settle(fire, 'started', { runId: run.runId, detail: `started by ${fire.holder}` });
        return;
      }
      this.options.logger.info(
        { workflow: fire.workflow, scheduledAt: fire.scheduledAt.toISOString(), holder: fire.holder, state: fire.state },
        'finishing a fire claimed earlier',
      );
      await this.act(target, fire);
    } catch (error) {
      this.options.logger.error({ workflow: fire.workflow, error: describeError(error) }, 'cannot finish an unfinished fire');
    }
  }

  private async decide(target: FireTarget, claim: FireClaim): Promise<FireResult> {
    const start = await this.options.supervisor.startForFire(target.name, claim);
    if (start.kind === 'started') return { outcome: 'started', runId: start.runId, detail: '' };
    if (start.kind === 'failed') return { outcome: 'failed', runId: '', detail: start.error };
    const going = `the previous run ${start.run.runId} is still going`;
    switch (target.schedule.overlap) {
      case 'SKIP':
        return { outcome: 'skipped', runId: '', detail: `SKIP: ${going}` };
      case 'QUEUE': {
        const queued = this.options.supervisor.queue(target.name, () => this.startQueued(target, claim));
        return queued
          ? { outcome: 'queued', runId: '', detail: `QUEUE: starts when ${start.run.runId} ends` }
          : { outcome: 'skipped', runId: '', detail: `QUEUE: ${going} and a fire is queued already` };
      }
      case 'ALLOW':
        return this.publishTrigger(target, claim);
    }
  }

  private async publishTrigger(target: FireTarget, claim: FireClaim): Promise<FireResult> {
    if (target.inlet === undefined) return { outcome: 'skipped', runId: '', detail: NO_INLET_DETAIL };
    const firedAt = this.options.clock.now();
    const body = {
      scheduledAt: claim.scheduledAt.toISOString(),
      firedAt: firedAt.toISOString(),
      schedule: { cron: target.schedule.cron, timezone: target.schedule.timezone, kind: claim.kind },
    };
    // one id per fire: the message of a fire made up for after a takeover is recognisably the same fire
    const messageId = `schedule:${target.name}:${claim.scheduledAt.toISOString()}`;
    try {
      await this.options.executor.publish(target.name, target.inlet, body, messageId);
      return { outcome: 'published', runId: '', detail: messageId };
    } catch (error) {
      return { outcome: 'failed', runId: '', detail: `publishing the trigger message failed: ${describeError(error)}` };
    }
  }

  /** The queued start of a QUEUE fire, once the run it waited for ended. */
  private async startQueued(target: FireTarget, claim: FireClaim): Promise<void> {
    const start = await this.options.supervisor
      .startForFire(target.name, claim)
      .catch((error: unknown) => ({ kind: 'failed' as const, error: describeError(error) }));
    if (start.kind === 'running') {
      // another run began meanwhile: keep waiting for that one
      if (this.options.supervisor.queue(target.name, () => this.startQueued(target, claim))) return;
    }
    const result: FireResult =
      start.kind === 'started'
        ? { outcome: 'started', runId: start.runId, detail: 'queued fire' }
        : {
            outcome: start.kind === 'failed' ? 'failed' : 'skipped',
            runId: '',
            detail: start.kind === 'failed' ? start.error : 'QUEUE: a fire is queued already',
          };
    await this.settle(target, claim, result);
  }

  private async settle(target: FireTarget, claim: FireClaim, result: FireResult): Promise<void> {
    const fields = {
      workflow: target.name,
      scheduledAt: claim.scheduledAt.toISOString(),
      kind: claim.kind,
      outcome: result.outcome,
      runId: result.runId || undefined,
      detail: result.detail || undefined,
    };
    if (result.outcome === 'failed') this.options.logger.warn(fields, 'schedule fired; the fire failed');
    else this.options.logger.info(fields, 'schedule fired');
    try {
      await this.options.store.settle(claim, result.outcome, { runId: result.runId, detail: result.detail });
    } catch (error) {
      this.options.logger.error({ ...fields, error: describeError(error) }, 'could not record how a fire ended');
    }
    this.options.observer?.({ ...result, workflow: target.name, scheduledAt: claim.scheduledAt, kind: claim.kind, firedAt: this.options.clock.now() });
  }
}

function keyOf(fire: FireClaim): string {
  return `${fire.workflow}@${fire.scheduledAt.toISOString()}`;
}
