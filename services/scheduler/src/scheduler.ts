import { AuditEventType, type ExecutorClient, type ScheduleStatus, type WorkflowStoreClient } from '@loom/contracts';
import { type LoomConfig } from '@loom/config';
import { FailedPreconditionError, resolveStoredName, type Schedule, workflowBaseName } from '@loom/domain';
import { appendRequired, type AuditAppender } from '@loom/service-kit';
import { type Logger } from '@loom/telemetry';
import { type Clock, systemClock } from '@loom/foundation';
import { CronSchedule } from './cron-schedule.js';
import { NoScheduleError, ScheduledWorkflowNotFoundError } from './errors.js';
import { describeError, ExecutorPort } from './executor-port.js';
import { type FireEvent, type FireResult, FireRunner, type FireTarget } from './fire-runner.js';
import { type Leadership } from './leadership.js';
import { RunSupervisor } from './run-supervisor.js';
import { runScheduleLoop } from './schedule-loop.js';
import { scheduleStatus } from './schedule-status.js';
import { type FireClaim, type SchedulerStateStore, type UnfinishedFire } from './state-store.js';
import { type WorkflowEntry, WorkflowFeed } from './workflow-feed.js';

/** How many autoStart workflows start at once when the scheduler takes over. */
const START_CONCURRENCY = 64;
/** How often the leader deletes settled fires past their retention. */
const PRUNE_EVERY_MS = 60 * 60 * 1000;

/** What the scheduler is built from. */
export interface SchedulerOptions {
  readonly config: LoomConfig['scheduler'];
  readonly logger: Logger;
  readonly store: SchedulerStateStore;
  readonly leadership: Leadership;
  readonly workflowStore: () => WorkflowStoreClient;
  readonly executor: () => ExecutorClient;
  /** Where pauses and resumes are audited (SCHEDULE_CHANGED, fail closed). */
  readonly audit: () => AuditAppender;
  /** The schedules' clock: the system clock unless a test moves time by hand. */
  readonly clock?: Clock;
  /** The restarts' clock (backoff delays), apart from the schedules' so a test can move either alone; the system clock by default. */
  readonly restartClock?: Clock;
  /** Sees every fire and its result. */
  readonly observer?: (event: FireEvent) => void;
  readonly random?: () => number;
}

interface Managed {
  entry: WorkflowEntry;
  schedule: Schedule | undefined;
  cron: CronSchedule | undefined;
  scheduleProblem: string;
  loop: { readonly controller: AbortController; readonly done: Promise<void> } | undefined;
  /** The schedule made up for missed fires in this leadership term already. */
  caughtUp: boolean;
  /** The config store answered for its schedule at least once. */
  scheduleKnown: boolean;
  /** Unfinished fires of another scheduler, waiting for the schedule to be known. */
  adoptions: UnfinishedFire[];
}

function sameSchedule(a: Schedule | undefined, b: Schedule | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The scheduler: follows the stored workflows and their schedules, and while it leads keeps autoStart workflows
 * running and fires schedules. Several schedulers may run; the lease decides which one acts.
 */
export class Scheduler {
  private readonly managed = new Map<string, Managed>();
  private readonly clock: Clock;
  private readonly supervisor: RunSupervisor;
  private readonly fires: FireRunner;
  private readonly feed: WorkflowFeed;
  private ready = false;
  private acting: AbortController | undefined;
  private closed = false;
  private stopped: Promise<unknown>[] = [];
  private feedClosed: Promise<void> = Promise.resolve();

  constructor(private readonly options: SchedulerOptions) {
    this.clock = options.clock ?? systemClock;
    const executor = new ExecutorPort(options.executor);
    this.supervisor = new RunSupervisor({
      executor,
      logger: options.logger,
      backoff: options.config.restart,
      clock: options.restartClock ?? systemClock,
      ...(options.random === undefined ? {} : { random: options.random }),
    });
    this.fires = new FireRunner({
      store: options.store,
      supervisor: this.supervisor,
      executor,
      logger: options.logger,
      holder: options.leadership.identity,
      clock: this.clock,
      ...(options.observer === undefined ? {} : { observer: options.observer }),
    });
    this.feed = new WorkflowFeed(
      options.workflowStore,
      {
        workflow: (entry, initial) => this.onWorkflow(entry, initial),
        deleted: (name) => this.onDeleted(name),
        snapshotComplete: (names) => this.onSnapshot(names),
        schedule: (name, schedule, problem) => this.onSchedule(name, schedule, problem),
      },
      options.logger,
      systemClock,
    );
  }

  /** Follows the config store and takes part in leadership; call once the services listen. */
  start(): void {
    this.options.logger.info({ identity: this.options.leadership.identity, state: this.options.store.description }, 'scheduler starting');
    this.feed.start();
    this.options.leadership.start(
      () => this.acquired(),
      () => this.lost(),
    );
  }

  private get actingSignal(): AbortSignal | undefined {
    return this.acting !== undefined && !this.acting.signal.aborted ? this.acting.signal : undefined;
  }

  private acquired(): void {
    if (this.closed) return;
    this.acting = new AbortController();
    this.supervisor.beginActing();
    for (const managed of this.managed.values()) managed.caughtUp = false;
    if (this.ready) void this.takeOver(this.acting.signal);
    void this.pruneRegularly(this.acting.signal);
  }

  private lost(): void {
    this.acting?.abort();
    this.acting = undefined;
    this.supervisor.endActing();
    for (const managed of this.managed.values()) {
      managed.loop = undefined;
      managed.adoptions = [];
    }
  }

  /** Leading with the stored workflows known: start autoStart workflows, finish others' fires, run every schedule. */
  private async takeOver(signal: AbortSignal): Promise<void> {
    const started = Date.now();
    const autoStart = [...this.managed.values()].filter((managed) => managed.entry.autoStart && managed.entry.valid).map((managed) => managed.entry.name);
    for (const managed of this.managed.values()) this.syncLoop(managed);
    await this.adoptUnfinished(signal);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < autoStart.length && !signal.aborted) await this.supervisor.ensureRunning(autoStart[next++] as string, 'autoStart');
    };
    await Promise.all(Array.from({ length: Math.min(START_CONCURRENCY, autoStart.length) }, worker));
    if (autoStart.length > 0) this.options.logger.info({ workflows: autoStart.length, ms: Date.now() - started }, 'autoStart workflows started');
  }

  /** Carries out fires a scheduler claimed and did not finish: started already, or made up for now. */
  private async adoptUnfinished(signal: AbortSignal): Promise<void> {
    let unfinished: UnfinishedFire[];
    try {
      unfinished = await this.options.store.unfinished();
    } catch (error) {
      this.options.logger.error({ error: describeError(error) }, 'cannot read unfinished fires');
      return;
    }
    for (const fire of unfinished) {
      if (signal.aborted) return;
      const managed = this.managed.get(fire.workflow);
      if (managed !== undefined && !managed.scheduleKnown) {
        // its schedule is still being read: the fire is finished once it is known
        managed.adoptions.push(fire);
        continue;
      }
      await this.fires.adopt(this.targetOf(managed), fire);
    }
  }

  private async pruneRegularly(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const pruned = await this.options.store.prune();
        if (pruned > 0) this.options.logger.info({ pruned }, 'old fires deleted');
      } catch (error) {
        this.options.logger.warn({ error: describeError(error) }, 'cannot delete old fires');
      }
      await systemClock.sleepUntil(new Date(Date.now() + PRUNE_EVERY_MS), signal);
    }
  }

  private onWorkflow(entry: WorkflowEntry, initial: boolean): void {
    const managed = this.managed.get(entry.name);
    const previous = managed?.entry;
    if (managed === undefined)
      this.managed.set(entry.name, {
        entry,
        schedule: undefined,
        cron: undefined,
        scheduleProblem: '',
        loop: undefined,
        caughtUp: false,
        scheduleKnown: false,
        adoptions: [],
      });
    else managed.entry = entry;
    this.supervisor.setAutoStart(entry.name, entry.autoStart && entry.valid);
    // before the first snapshot is complete, the takeover starts everything at once
    if (this.actingSignal === undefined || (initial && !this.ready) || !entry.valid) return;
    if (previous !== undefined && entry.version > previous.version) {
      void this.supervisor.newVersion(entry.name, this.updatePolicy(entry.name) === 'restart');
    } else if (entry.autoStart && (previous === undefined || !previous.autoStart || !previous.valid)) {
      void this.supervisor.ensureRunning(entry.name, previous === undefined ? 'autoStart (new workflow)' : 'autoStart switched on');
    }
  }

  private updatePolicy(name: string): 'restart' | 'keep' {
    const { update } = this.options.config;
    return update.workflows[name] ?? update.workflows[workflowBaseName(name)] ?? update.default;
  }

  private onDeleted(name: string): void {
    const managed = this.managed.get(name);
    if (managed === undefined) return;
    managed.loop?.controller.abort();
    this.managed.delete(name);
    this.supervisor.forget(name);
    if (this.actingSignal !== undefined) {
      this.options.store
        .forget(name)
        .catch((error: unknown) => this.options.logger.warn({ workflow: name, error: describeError(error) }, 'cannot drop the state of a deleted workflow'));
    }
  }

  private onSnapshot(names: ReadonlySet<string>): void {
    for (const name of [...this.managed.keys()]) if (!names.has(name)) this.onDeleted(name);
    if (this.ready) return;
    this.ready = true;
    this.options.logger.info({ workflows: names.size }, 'stored workflows known');
    const signal = this.actingSignal;
    if (signal !== undefined) void this.takeOver(signal);
  }

  private onSchedule(name: string, schedule: Schedule | undefined, problem: string): void {
    const managed = this.managed.get(name);
    if (managed === undefined) return;
    let cron: CronSchedule | undefined;
    if (schedule !== undefined) {
      try {
        cron = CronSchedule.of(schedule);
      } catch (error) {
        problem = describeError(error);
      }
    }
    if (problem !== '' && problem !== managed.scheduleProblem) this.options.logger.warn({ workflow: name, problem }, 'schedule cannot run');
    const changed = !sameSchedule(managed.schedule, schedule) || managed.scheduleProblem !== problem;
    managed.schedule = schedule;
    managed.cron = cron;
    managed.scheduleProblem = problem;
    managed.scheduleKnown = true;
    const adoptions = managed.adoptions.splice(0);
    if (this.actingSignal !== undefined) for (const fire of adoptions) void this.fires.adopt(this.targetOf(managed), fire);
    if (changed) {
      managed.loop?.controller.abort();
      managed.loop = undefined;
    }
    if (this.ready) this.syncLoop(managed);
  }

  /** Runs the schedule's loop while leading and the schedule is enabled and usable. */
  private syncLoop(managed: Managed): void {
    const signal = this.actingSignal;
    const cron = managed.cron;
    if (signal === undefined || cron === undefined || managed.schedule?.enabled !== true || !managed.entry.valid || managed.loop !== undefined) return;
    const controller = new AbortController();
    const loopSignal = AbortSignal.any([controller.signal, signal]);
    const catchUp = !managed.caughtUp;
    managed.caughtUp = true;
    const name = managed.entry.name;
    const done = this.options.store
      .record(name)
      .then((record) =>
        runScheduleLoop({
          workflow: name,
          cron,
          clock: this.clock,
          store: this.options.store,
          logger: this.options.logger,
          fire: async (scheduledAt, kind) => {
            const target = this.targetOf(this.managed.get(name));
            if (target !== undefined) await this.fires.fire(target, scheduledAt, kind);
          },
          catchUp,
          record,
          maxCatchUpFires: this.options.config.catchUp.maxFires,
          signal: loopSignal,
        }),
      )
      .catch((error: unknown) => this.options.logger.error({ workflow: name, error: describeError(error) }, 'schedule stopped: its state cannot be read'));
    managed.loop = { controller, done };
  }

  private targetOf(managed: Managed | undefined): FireTarget | undefined {
    if (managed?.schedule === undefined || !managed.entry.valid) return undefined;
    return { name: managed.entry.name, schedule: managed.schedule, inlet: managed.entry.inlet };
  }

  private find(requested: string): Managed {
    const name = resolveStoredName(requested, this.managed.keys(), 'workflow_name');
    const managed = name === undefined ? undefined : this.managed.get(name);
    if (managed === undefined || (managed.schedule === undefined && !managed.entry.autoStart && managed.scheduleProblem === '')) {
      throw new ScheduledWorkflowNotFoundError(requested);
    }
    return managed;
  }

  private scheduled(requested: string): Managed {
    const managed = this.find(requested);
    if (managed.schedule === undefined) {
      const why =
        managed.scheduleProblem === '' ? 'has no schedule (set one with loom schedule set)' : `has a schedule that cannot run: ${managed.scheduleProblem}`;
      throw new NoScheduleError(`workflow '${managed.entry.name}' ${why}`);
    }
    return managed;
  }

  /** Every workflow with a schedule or autoStart, by stored name. */
  async list(): Promise<ScheduleStatus[]> {
    const [records, leaseHolder] = await Promise.all([this.options.store.records(), this.options.leadership.holder()]);
    const now = this.clock.now();
    return [...this.managed.values()]
      .filter((managed) => managed.schedule !== undefined || managed.entry.autoStart || managed.scheduleProblem !== '')
      .sort((a, b) => (a.entry.name < b.entry.name ? -1 : a.entry.name > b.entry.name ? 1 : 0))
      .map((managed) => this.statusOf(managed, records.get(managed.entry.name), leaseHolder, now));
  }

  private statusOf(managed: Managed, record: Parameters<typeof scheduleStatus>[0]['record'], leaseHolder: string, now: Date): ScheduleStatus {
    return scheduleStatus({
      name: managed.entry.name,
      autoStart: managed.entry.autoStart,
      schedule: managed.schedule,
      cron: managed.cron,
      scheduleProblem: managed.scheduleProblem,
      record,
      run: this.supervisor.view(managed.entry.name),
      leaseHolder,
      now,
    });
  }

  /** Pauses or resumes a schedule; fires due while paused are dropped, not made up for. */
  async setPaused(requested: string, paused: boolean, actor?: string): Promise<ScheduleStatus> {
    const managed = this.scheduled(requested);
    // fail closed: the pause or resume is stored only once its audit event is on disk
    await appendRequired(this.options.audit(), {
      type: AuditEventType.AUDIT_EVENT_TYPE_SCHEDULE_CHANGED,
      workflowName: managed.entry.name,
      actor: actor ?? 'anonymous',
      attributes: { change: paused ? 'paused' : 'resumed', version: String(managed.entry.version) },
    });
    const record = await this.options.store.setPaused(managed.entry.name, paused, this.clock.now());
    this.options.logger.info({ workflow: managed.entry.name }, paused ? 'schedule paused' : 'schedule resumed');
    return this.statusOf(managed, record, await this.options.leadership.holder(), this.clock.now());
  }

  /** Fires a schedule once, now, under its overlap policy, from whichever scheduler is asked. */
  async trigger(requested: string): Promise<FireResult> {
    const managed = this.scheduled(requested);
    const target = this.targetOf(managed);
    if (target === undefined) throw new FailedPreconditionError(`workflow '${managed.entry.name}' is stored but invalid: ${managed.entry.invalidReason}`);
    // manual fires are keyed by their millisecond: two in the same one take the next
    for (let offset = 0; ; offset++) {
      const at = new Date(this.clock.now().getTime() + offset);
      const claim: FireClaim = {
        workflow: target.name,
        scheduledAt: at,
        kind: 'manual',
        holder: this.options.leadership.identity,
        claimedAt: this.clock.now(),
      };
      if (await this.options.store.claim(claim)) return this.fires.act(target, claim);
    }
  }

  /** Stops acting at once (the server is shutting down): no new fire, start or restart; the lease is kept until close. */
  stop(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopped = [...this.managed.values()].flatMap((managed) => (managed.loop === undefined ? [] : [managed.loop.done]));
    this.lost();
    this.supervisor.close();
    this.feedClosed = this.feed.close();
  }

  /** Stops, lets fires in progress finish, gives up the lease and closes the state. */
  async close(): Promise<void> {
    this.stop();
    await this.feedClosed;
    await Promise.allSettled(this.stopped);
    await this.options.leadership.close();
    await this.options.store.close();
  }
}
