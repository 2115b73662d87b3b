import { status } from '@grpc/grpc-js';
import { type WatchRunResponse, WorkflowState } from '@loom/contracts';
import { type BackoffPolicy, KeyedLock, Lifecycle, restartDelayMs, type TransitionTable } from '@loom/foundation';
import { isServiceError } from '@loom/service-kit';
import { type Logger } from '@loom/telemetry';
import { type Clock } from '@loom/foundation';
import { describeError, type ExecutorPort, hasEnded, isGoing, isUnavailable, type RunInfo, stateName } from './executor-port.js';

/** A run that stayed RUNNING this long was healthy: the next failure starts the backoff afresh. */
export const HEALTHY_RUN_MS = 60_000;
/** How the supervisor waits for an executor it cannot reach: 200 ms doubling to 5 s. */
const EXECUTOR_RETRY: BackoffPolicy = { initialDelayMs: 200, maxDelayMs: 5000 };

/**
 * The supervisor's states: FOLLOWING (runs are followed, nothing is started: another scheduler
 * leads, or none yet), ACTING (this scheduler leads: it starts and restarts), CLOSED (final).
 */
export type SupervisorState = 'FOLLOWING' | 'ACTING' | 'CLOSED';

/** The moves the supervisor makes; beginning to act while acting is a leadership bug, so it is illegal. */
export const SUPERVISOR_TRANSITIONS: TransitionTable<SupervisorState> = {
  FOLLOWING: ['ACTING', 'CLOSED'],
  ACTING: ['FOLLOWING', 'CLOSED'],
  CLOSED: [],
};

/** What the scheduler knows of a workflow's run. */
export interface RunView {
  readonly runId: string;
  readonly state: WorkflowState;
  readonly restartAttempts: number;
  readonly nextRestartAt?: Date;
  readonly lastError: string;
  readonly fireQueued: boolean;
}

/** What a start for a fire came to: a new run, a failure, or the previous run still going. */
export type FireStart =
  | { readonly kind: 'started'; readonly runId: string }
  | { readonly kind: 'failed'; readonly error: string }
  | { readonly kind: 'running'; readonly run: RunInfo };

interface Track {
  readonly name: string;
  autoStart: boolean;
  runId: string;
  state: WorkflowState;
  runningSince?: number;
  lastError: string;
  attempts: number;
  nextRestartAt?: Date;
  retry?: AbortController;
  watch?: { runId: string; controller: AbortController };
  queued?: () => Promise<void>;
}

/** What the supervisor works with. */
export interface RunSupervisorOptions {
  readonly executor: ExecutorPort;
  readonly logger: Logger;
  readonly backoff: BackoffPolicy;
  /** Real time, for backoff delays. */
  readonly clock: Clock;
  readonly random?: () => number;
}

/**
 * Keeps autoStart workflows running and follows runs. While this scheduler leads (`beginActing`), it starts autoStart
 * workflows, restarts one whose start or run fails with capped, jittered exponential backoff, and starts it again when
 * the executor lost it (restarted). It follows runs through WatchRun, so a QUEUE fire starts the moment the previous
 * run ends. Actions on one workflow run one at a time.
 */
export class RunSupervisor {
  private readonly tracks = new Map<string, Track>();
  private readonly lock = new KeyedLock();
  private readonly lifetime = new AbortController();
  private readonly lifecycle = new Lifecycle<SupervisorState>('run supervisor', SUPERVISOR_TRANSITIONS, 'FOLLOWING');
  /** Aborted when this stint of acting ends: pending restarts belong to it. */
  private acting: AbortController | undefined;

  constructor(private readonly options: RunSupervisorOptions) {}

  /** FOLLOWING, ACTING or CLOSED. */
  get state(): SupervisorState {
    return this.lifecycle.state;
  }

  private track(name: string): Track {
    let track = this.tracks.get(name);
    if (track === undefined) {
      track = { name, autoStart: false, runId: '', state: WorkflowState.WORKFLOW_STATE_UNSPECIFIED, lastError: '', attempts: 0 };
      this.tracks.set(name, track);
    }
    return track;
  }

  /** Runs `task` while no other action on the workflow runs. */
  exclusive<T>(name: string, task: () => Promise<T>): Promise<T> {
    return this.lock.run(name, task);
  }

  /** Records whether the workflow is autoStart (from its stored configuration). */
  setAutoStart(name: string, autoStart: boolean): void {
    this.track(name).autoStart = autoStart;
  }

  /**
   * This scheduler leads from now on: automatic starts and restarts may happen until `endActing`.
   * IllegalTransitionError when it acts already or is closed.
   */
  beginActing(): void {
    this.lifecycle.to('ACTING');
    this.acting = new AbortController();
  }

  /**
   * This scheduler stopped leading: pending restarts are cancelled, watches end, queued fires are
   * dropped. Nothing to do when it was not acting (so it may be called any number of times).
   */
  endActing(): void {
    if (this.lifecycle.is('ACTING')) this.lifecycle.to('FOLLOWING');
    this.acting?.abort();
    this.acting = undefined;
    for (const track of this.tracks.values()) {
      track.retry?.abort();
      track.retry = undefined;
      track.nextRestartAt = undefined;
      track.watch?.controller.abort();
      track.watch = undefined;
      track.queued = undefined;
    }
  }

  private get isActing(): boolean {
    return this.lifecycle.is('ACTING');
  }

  /** What the scheduler knows of a workflow's run. */
  view(name: string): RunView {
    const track = this.track(name);
    if (track.runningSince !== undefined && this.options.clock.now().getTime() - track.runningSince >= HEALTHY_RUN_MS) track.attempts = 0;
    return {
      runId: track.runId,
      state: track.state,
      restartAttempts: track.attempts,
      ...(track.nextRestartAt === undefined ? {} : { nextRestartAt: track.nextRestartAt }),
      lastError: track.lastError,
      fireQueued: track.queued !== undefined,
    };
  }

  /**
   * Starts an autoStart workflow unless a restart is already pending. `checkFirst` asks the executor before starting
   * and leaves a STOPPED run stopped (someone stopped it); otherwise it starts whatever the state.
   */
  ensureRunning(name: string, reason: string, checkFirst = false): Promise<void> {
    const track = this.track(name);
    if (!this.isActing || !track.autoStart || track.retry !== undefined) return Promise.resolve();
    return this.exclusive(name, async () => {
      if (!this.isActing || !track.autoStart) return;
      try {
        if (checkFirst) {
          const run = await this.options.executor.status(name);
          if (run !== undefined && (isGoing(run.state) || run.state === WorkflowState.WORKFLOW_STATE_STOPPED)) {
            this.observe(track, run);
            return;
          }
        }
        const run = await this.options.executor.start(name);
        this.started(track, run, reason);
      } catch (error) {
        await this.startFailed(track, error, reason);
      }
    });
  }

  /** The run as the executor has it now; a going run is followed from here on. */
  async currentRun(name: string): Promise<RunInfo | undefined> {
    const run = await this.options.executor.status(name);
    const track = this.track(name);
    if (run !== undefined) this.observe(track, run);
    return run;
  }

  /** Starts a workflow for a fire (call inside `exclusive`); a run still going is answered, not an error. */
  async startForFire(name: string, fire: { scheduledAt: Date; kind: string }): Promise<FireStart> {
    const track = this.track(name);
    const current = await this.currentRun(name);
    if (current !== undefined && isGoing(current.state)) return { kind: 'running', run: current };
    try {
      const run = await this.options.executor.start(name, fire);
      if (run.alreadyRunning === true) {
        // someone started it between the status and the start; the executor answers that run
        this.observe(track, run);
        return { kind: 'running', run };
      }
      this.started(track, run, `${fire.kind} fire of ${fire.scheduledAt.toISOString()}`);
      return { kind: 'started', runId: run.runId };
    } catch (error) {
      if (isServiceError(error) && error.code === status.FAILED_PRECONDITION) {
        // the executor refuses a second run: someone started it between the status and the start
        const again = await this.currentRun(name).catch(() => undefined);
        if (again !== undefined && isGoing(again.state)) return { kind: 'running', run: again };
      }
      track.lastError = describeError(error);
      return { kind: 'failed', error: track.lastError };
    }
  }

  /** QUEUE: runs `start` (inside `exclusive`) once the current run ends; false when a fire is queued already. */
  queue(name: string, start: () => Promise<void>): boolean {
    const track = this.track(name);
    if (track.queued !== undefined) return false;
    track.queued = start;
    this.follow(track);
    return true;
  }

  /** A new version was pushed: a going run restarts (`restart`) or keeps running; a stopped autoStart one starts. */
  newVersion(name: string, restart: boolean): Promise<void> {
    const track = this.track(name);
    if (!this.isActing) return Promise.resolve();
    return this.exclusive(name, async () => {
      try {
        const run = await this.options.executor.status(name);
        if (run !== undefined && isGoing(run.state)) {
          if (!restart) {
            this.options.logger.info({ workflow: name, runId: run.runId }, 'new version stored; the running run keeps the old one until its next start');
            this.observe(track, run);
            return;
          }
          track.watch?.controller.abort();
          track.watch = undefined;
          await this.options.executor.stop(name);
          const started = await this.options.executor.start(name);
          this.started(track, started, 'new version');
          return;
        }
        if (track.autoStart) this.started(track, await this.options.executor.start(name), 'new version');
      } catch (error) {
        await this.startFailed(track, error, 'new version');
      }
    });
  }

  /** Stops following a deleted workflow; its run, if any, is left to the executor. */
  forget(name: string): void {
    const track = this.tracks.get(name);
    track?.retry?.abort();
    track?.watch?.controller.abort();
    this.tracks.delete(name);
  }

  private started(track: Track, run: RunInfo, reason: string): void {
    track.lastError = '';
    this.observe(track, run);
    this.options.logger.info({ workflow: track.name, runId: run.runId, reason, attempt: track.attempts }, 'workflow started');
  }

  /** Takes a run's state in and follows it while it goes. */
  private observe(track: Track, run: RunInfo): void {
    if (run.runId !== track.runId) track.runningSince = undefined;
    track.runId = run.runId;
    track.state = run.state;
    if (run.state === WorkflowState.WORKFLOW_STATE_RUNNING) track.runningSince ??= (run.startedAt ?? this.options.clock.now()).getTime();
    if (isGoing(run.state)) this.follow(track);
  }

  private async startFailed(track: Track, error: unknown, reason: string): Promise<void> {
    if (isServiceError(error) && error.code === status.FAILED_PRECONDITION) {
      // already running (started by someone else) is not a failure; anything else the status tells
      const run = await this.options.executor.status(track.name).catch(() => undefined);
      if (run !== undefined && isGoing(run.state)) {
        this.observe(track, run);
        return;
      }
    }
    if (isServiceError(error) && error.code === status.NOT_FOUND) {
      this.options.logger.warn({ workflow: track.name, error: describeError(error) }, 'workflow to start is not stored; not restarting it');
      return;
    }
    if (isUnavailable(error)) {
      track.lastError = describeError(error);
      this.options.logger.warn({ workflow: track.name, error: track.lastError }, 'executor unreachable; starting the workflow once it answers');
      void this.afterExecutorReturns(track, () => void this.ensureRunning(track.name, `${reason}, executor back`));
      return;
    }
    this.scheduleRestart(track, describeError(error), reason);
  }

  /** Counts a failure and starts the workflow again after the backoff delay. */
  private scheduleRestart(track: Track, error: string, reason: string): void {
    const now = this.options.clock.now();
    if (track.runningSince !== undefined && now.getTime() - track.runningSince >= HEALTHY_RUN_MS) track.attempts = 0;
    track.runningSince = undefined;
    track.lastError = error;
    track.attempts++;
    const delayMs = restartDelayMs(this.options.backoff, track.attempts, this.options.random);
    track.nextRestartAt = new Date(now.getTime() + delayMs);
    this.options.logger.warn({ workflow: track.name, attempt: track.attempts, delayMs, reason, error }, 'workflow failed; restarting it after a backoff delay');
    const retry = new AbortController();
    track.retry = retry;
    const signal = AbortSignal.any([retry.signal, this.acting?.signal ?? AbortSignal.abort()]);
    void this.options.clock.sleepUntil(track.nextRestartAt, signal).then(() => {
      if (signal.aborted) return;
      track.retry = undefined;
      track.nextRestartAt = undefined;
      void this.ensureRunning(track.name, `restart attempt ${track.attempts}`);
    });
  }

  /** Follows the track's run through WatchRun until it ends; one watch per run. */
  private follow(track: Track): void {
    if (track.watch !== undefined && track.watch.runId === track.runId) return;
    track.watch?.controller.abort();
    const controller = new AbortController();
    const watch = { runId: track.runId, controller };
    track.watch = watch;
    const signal = AbortSignal.any([controller.signal, this.lifetime.signal]);
    let last: WorkflowState = track.state;
    let error = '';
    const onEvent = (event: WatchRunResponse): void => {
      if (event.runId !== watch.runId) return; // a run other than this one: its own watch covers it
      if (event.error !== '' && event.component === '') error = event.error;
      last = event.state;
      if (track.runId === watch.runId) track.state = event.state;
    };
    this.options.executor
      .watch(track.name, onEvent, signal)
      .then(
        () => (signal.aborted ? undefined : this.watchEnded(track, watch, hasEnded(last) ? last : undefined, error)),
        (failure: unknown) => (signal.aborted ? undefined : this.watchFailed(track, watch, failure)),
      )
      .catch((failure: unknown) => this.options.logger.error({ workflow: track.name, error: describeError(failure) }, 'following a run failed'));
  }

  /** The stream ended: with the run's end, or without (the executor is going away); the status decides. */
  private async watchEnded(track: Track, watch: Track['watch'], ended: WorkflowState | undefined, error: string): Promise<void> {
    if (track.watch !== watch) return;
    track.watch = undefined;
    let run: RunInfo | undefined;
    try {
      run = await this.options.executor.status(track.name);
    } catch (failure) {
      if (isUnavailable(failure)) return this.watchFailed(track, watch, failure);
      throw failure;
    }
    if (run !== undefined && run.runId !== watch?.runId && isGoing(run.state)) {
      this.observe(track, run); // a newer run: follow that one
      return;
    }
    const state = run?.runId === watch?.runId ? run?.state : ended;
    await this.runEnded(track, state, run?.lastError || error);
  }

  /** The executor cannot be reached: once it answers again, the run is looked at afresh. */
  private async watchFailed(track: Track, watch: Track['watch'], failure: unknown): Promise<void> {
    if (track.watch === watch) track.watch = undefined;
    this.options.logger.warn(
      { workflow: track.name, error: describeError(failure) },
      'lost the run stream of the executor; following it again once the executor answers',
    );
    await this.afterExecutorReturns(track, (run) => {
      if (run !== undefined && isGoing(run.state)) this.observe(track, run);
      else void this.runEnded(track, run?.runId === watch?.runId ? run?.state : undefined, run?.lastError ?? '');
    });
  }

  /** Polls the workflow's status with backoff until the executor answers, then hands over the run it reports. */
  private async afterExecutorReturns(track: Track, then: (run: RunInfo | undefined) => void): Promise<void> {
    const signal = this.lifetime.signal;
    for (let attempt = 1; !signal.aborted; attempt++) {
      const delay = restartDelayMs(EXECUTOR_RETRY, attempt, this.options.random);
      await this.options.clock.sleepUntil(new Date(this.options.clock.now().getTime() + delay), signal);
      if (signal.aborted) return;
      try {
        then(await this.options.executor.status(track.name));
        return;
      } catch (error) {
        if (isUnavailable(error)) continue;
        this.options.logger.error({ workflow: track.name, error: describeError(error) }, 'the executor answers, but not with the run; no longer following it');
        return;
      }
    }
  }

  /**
   * A run ended. A queued fire starts now. While leading, an autoStart workflow whose run FAILED restarts after the
   * backoff delay, and one the executor no longer has (it restarted) starts at once; a STOPPED one stays stopped.
   */
  private async runEnded(track: Track, state: WorkflowState | undefined, error: string): Promise<void> {
    track.state = state ?? WorkflowState.WORKFLOW_STATE_UNSPECIFIED;
    this.options.logger.info({ workflow: track.name, runId: track.runId, state: stateName(state), error: error || undefined }, 'run ended');
    const queued = track.queued;
    if (queued !== undefined) {
      track.queued = undefined;
      await this.exclusive(track.name, queued);
      return;
    }
    if (!this.isActing || !track.autoStart) return;
    if (state === WorkflowState.WORKFLOW_STATE_FAILED) this.scheduleRestart(track, error || 'the run failed', 'run failed');
    else if (state === undefined) await this.ensureRunning(track.name, 'the executor no longer has the run');
  }

  /** Ends every watch and pending restart, for good; a second close does nothing. */
  close(): void {
    if (this.lifecycle.is('CLOSED')) return;
    this.endActing();
    this.lifecycle.to('CLOSED');
    this.lifetime.abort();
  }
}
