import { randomUUID } from 'node:crypto';
import { status as grpcStatus } from '@grpc/grpc-js';
import { FailedPreconditionError, LoomError, NotFoundError, resolveStoredName } from '@loom/domain';
import { KeyedLock, Lifecycle, restartDelayMs, ShutdownOnce, type TransitionTable } from '@loom/foundation';
import { Lease, LEASE_BUCKET, type KV, type Messaging } from '@loom/messaging';
import { isServiceError, ServerStateError } from '@loom/service-kit';
import { type Logger, type SecretRedactor } from '@loom/telemetry';
import { type MessageTrail } from '../runtime/message-trail.js';
import { type RunState, type WorkflowRun } from '../runtime/workflow-run.js';
import { type ExecutorRunStatus, ExecutorStatusBoard } from './executor-status.js';
import { type LeaseHandlers } from './leased-source.js';
import { ClusterRunState, type DesiredRun, type RecordedRun, RunStateConflictError } from './run-state.js';
import { TracePeers } from './trace-peers.js';

/** What the cluster asks of its executor. */
export interface ClusterMember {
  /** Loads a workflow from the config store and starts this executor's run of it (audits only a script engine's start). */
  launch(workflow: string): Promise<WorkflowRun>;
}

/** How a cluster member is set up. */
export interface ClusterOptions {
  /** This executor's name among the others (loom.executor.id). */
  readonly executorId: string;
  /** The lease time of singleton sources, also the heartbeat time of the status rows (loom.messaging.lease.timeMs). */
  readonly leaseMs: number;
  readonly logger: Logger;
  /** What this executor answers the others' `loom message trace` with, and how long it waits for theirs (TracePeers). */
  readonly trace: { readonly trail: MessageTrail; readonly redactor: SecretRedactor; readonly timeoutMs: number };
}

/** opening (buckets made), joined (watching the run state), closing, closed. */
type ClusterState = 'opening' | 'joined' | 'closing' | 'closed';

const CLUSTER_TRANSITIONS: TransitionTable<ClusterState> = {
  opening: ['joined', 'closing'],
  joined: ['closing'],
  closing: ['closed'],
  closed: [],
};

/** A local start that failed for a reason that passes (the config store not listening yet) is tried again. */
const RETRY = { initialDelayMs: 200, maxDelayMs: 5_000 };

/** This executor's part of a workflow: the generation it follows, its run of it, or why that did not start. */
interface LocalPart {
  generation: string;
  run?: WorkflowRun;
  /** The start failed (state FAILED), or waits to be tried again (state STARTING). */
  failure?: { readonly state: RunState; readonly error: string; readonly at: Date };
  retry?: NodeJS.Timeout;
}

/**
 * This executor as one of several sharing workflows (issue 35, durable mode). A start or stop on any executor is
 * recorded as the workflow's desired state (ClusterRunState); every executor watches it and starts or stops its own
 * run to match, and one that joins later starts every running workflow. An executor leaving stops only its own runs.
 * Each writes its part of each workflow to the status board, on every change and every third of the lease time.
 */
export class Cluster {
  private readonly lifecycle: Lifecycle<ClusterState>;
  private readonly closing = new ShutdownOnce(() => this.shutdown());
  private readonly lock = new KeyedLock();
  private readonly parts = new Map<string, LocalPart>();
  /** The desired state of every workflow the cluster knows, as last seen. */
  private readonly desired = new Map<string, DesiredRun>();
  private stopWatching: () => void = () => undefined;
  private heartbeat: NodeJS.Timeout | undefined;

  private constructor(
    private readonly options: ClusterOptions,
    private readonly runState: ClusterRunState,
    private readonly board: ExecutorStatusBoard,
    private readonly leases: KV,
    private readonly member: ClusterMember,
    /** The other executors' trails, asked for `loom message trace`; this one's answered to them. */
    readonly peers: TracePeers,
  ) {
    this.lifecycle = new Lifecycle(`executor '${options.executorId}' in the cluster`, CLUSTER_TRANSITIONS, 'opening');
  }

  /** Opens the cluster's buckets (made when missing); join() begins following the run state. */
  static async open(messaging: Messaging, options: ClusterOptions, member: ClusterMember): Promise<Cluster> {
    const [runState, board, leases] = await Promise.all([
      ClusterRunState.open(messaging),
      ExecutorStatusBoard.open(messaging, options.leaseMs),
      messaging.keyValue(LEASE_BUCKET, { ttlMs: options.leaseMs }),
    ]);
    // the board lists the executors a trace asks; this one answers theirs from its trail
    const peers = await TracePeers.open(messaging, { executorId: options.executorId, ...options.trace, peers: () => clusterOf(board, options.executorId) });
    return new Cluster(options, runState, board, leases, member, peers);
  }

  /** This executor's name among the others. */
  get executorId(): string {
    return this.options.executorId;
  }

  /** Watches the run state, starting this executor's run of every running workflow, and begins the heartbeat. */
  async join(): Promise<void> {
    this.stopWatching = await this.runState.watch((run) => {
      this.desired.set(run.workflow, run);
      void this.lock.run(run.workflow, () => this.reconcile(run));
    });
    this.lifecycle.to('joined');
    this.heartbeat = setInterval(() => void this.beat(), Math.max(10, Math.floor(this.options.leaseMs / 3)));
    this.heartbeat.unref();
  }

  /** The lease of a singleton source, held as this executor. */
  lease(key: string, handlers: LeaseHandlers): Lease {
    return new Lease({
      bucket: this.leases,
      key,
      holder: this.options.executorId,
      timeMs: this.options.leaseMs,
      ...handlers,
      onError: (error) => this.options.logger.warn({ lease: key, error: errorText(error) }, 'source lease request failed'),
    });
  }

  /** The workflow name a given name means: one this executor runs or the cluster knows (stored or workflow name). */
  resolve(name: string): string | undefined {
    return resolveStoredName(name, new Set([...this.parts.keys(), ...this.desired.keys()]));
  }

  /**
   * Starts a workflow on the whole cluster: this executor's run first (a start that fails here records nothing), then
   * the desired state RUNNING, which the others follow. A workflow the cluster runs already, whose run on this executor
   * had ended, is started again here only.
   */
  start(workflow: string, launch: () => Promise<WorkflowRun>): Promise<WorkflowRun> {
    return this.lock.run(workflow, async () => {
      const recorded = await this.runState.get(workflow);
      if (recorded?.run.state === 'RUNNING' || recorded?.run.state === 'PAUSED') {
        const rejoined = await this.launchPart(workflow, recorded.run.generation, launch);
        if (recorded.run.state === 'PAUSED') await rejoined.pause();
        return rejoined;
      }
      const generation = randomUUID();
      const run = await this.launchPart(workflow, generation, launch);
      const wanted: DesiredRun = { workflow, state: 'RUNNING', generation, drainTimeoutMs: 0, by: this.options.executorId };
      try {
        await this.runState.record(wanted, recorded?.revision ?? 0);
      } catch (error) {
        await run.stop(0);
        throw error;
      }
      this.desired.set(workflow, wanted);
      return run;
    });
  }

  /** Stops a workflow on the whole cluster: the desired state STOPPED, then this executor's run; resolves with its state. */
  stop(workflow: string, drainTimeoutMs: number): Promise<RunState> {
    return this.lock.run(workflow, async () => {
      let recorded: RecordedRun | undefined;
      for (let attempt = 0; ; attempt++) {
        recorded = await this.runState.get(workflow);
        if (recorded?.run.state !== 'RUNNING' && recorded?.run.state !== 'PAUSED') break;
        const wanted: DesiredRun = { ...recorded.run, state: 'STOPPED', drainTimeoutMs, by: this.options.executorId };
        try {
          await this.runState.record(wanted, recorded.revision);
          this.desired.set(workflow, wanted);
          break;
        } catch (error) {
          // a start or stop elsewhere at the same moment: read again once
          if (!(error instanceof RunStateConflictError) || attempt > 0) throw error;
        }
      }
      const run = this.parts.get(workflow)?.run;
      if (run === undefined && recorded === undefined) throw new NotFoundError('run in the cluster of workflow', workflow);
      if (run === undefined) return 'STOPPED';
      await run.stop(drainTimeoutMs);
      return run.state;
    });
  }

  /**
   * Pauses (`PAUSED`) or resumes (`RUNNING`) a workflow on the whole cluster: the desired state, then this executor's
   * run; resolves with its state. A workflow the cluster does not run is a FailedPreconditionError.
   */
  pauseOrResume(workflow: string, state: 'PAUSED' | 'RUNNING'): Promise<RunState> {
    return this.lock.run(workflow, async () => {
      const recorded = await this.runState.get(workflow);
      if (recorded?.run.state !== 'RUNNING' && recorded?.run.state !== 'PAUSED') {
        throw new FailedPreconditionError(`workflow '${workflow}' is ${recorded?.run.state ?? 'not started'} in the cluster, not RUNNING or PAUSED`);
      }
      if (recorded.run.state !== state) {
        const wanted: DesiredRun = { ...recorded.run, state, by: this.options.executorId };
        await this.runState.record(wanted, recorded.revision);
        this.desired.set(workflow, wanted);
      }
      const run = this.parts.get(workflow)?.run;
      if (run === undefined) return state;
      await (state === 'PAUSED' ? run.pause() : run.resume());
      return run.state;
    });
  }

  /** Every executor's part of a workflow: this one's as it is now, the others' as they last wrote it. */
  async status(workflow: string): Promise<ExecutorRunStatus[]> {
    const rows = (await this.board.read(workflow)).filter((row) => row.executorId !== this.options.executorId);
    const own = this.rowOf(workflow);
    if (own !== undefined) rows.push(own);
    return rows.sort((one, other) => one.executorId.localeCompare(other.executorId));
  }

  /**
   * Calls `onRow` with each report another executor makes of its part of a workflow (every state change, every third of
   * the lease time), until the returned function is called.
   */
  watchStatus(workflow: string, onRow: (row: ExecutorRunStatus) => void): Promise<() => void> {
    return this.board.watch(workflow, (row) => {
      if (row.executorId !== this.options.executorId) onRow(row);
    });
  }

  /** This executor's part of a workflow as it is now. */
  ownStatus(workflow: string): ExecutorRunStatus | undefined {
    return this.rowOf(workflow);
  }

  /** The workflow's desired state as this executor last saw it. */
  desiredState(workflow: string): DesiredRun | undefined {
    return this.desired.get(workflow);
  }

  /** Stops following the run state and removes this executor's rows; its runs are the executor's to stop. Idempotent. */
  close(): Promise<void> {
    return this.closing.call();
  }

  /** Brings this executor's run of a workflow to its desired state. */
  private async reconcile(wanted: DesiredRun): Promise<void> {
    if (this.closing.called) return;
    const part = this.parts.get(wanted.workflow);
    const active = part?.run?.state === 'RUNNING' || part?.run?.state === 'PAUSED' || part?.run?.state === 'STARTING';
    if (wanted.state === 'STOPPED') {
      clearTimeout(part?.retry);
      if (part?.failure?.state === 'STARTING') part.failure = { state: 'STOPPED', error: '', at: new Date() };
      if (active) await this.halt(part.run!, wanted.drainTimeoutMs, `stopped by executor '${wanted.by}'`);
      return;
    }
    // a generation this executor follows already: its run is running or paused as asked, has failed (reported), or waits for a retry
    if (part?.generation === wanted.generation) {
      if (wanted.state === 'PAUSED') await part.run?.pause();
      else await part.run?.resume();
      return;
    }
    if (active) await this.halt(part.run!, wanted.drainTimeoutMs, 'a newer start of the workflow');
    await this.follow(wanted, 1);
  }

  /** Starts this executor's run of a generation the cluster runs; a passing failure is tried again with backoff. */
  private async follow(wanted: DesiredRun, attempt: number): Promise<void> {
    const { workflow, generation } = wanted;
    try {
      const run = await this.launchPart(workflow, generation, () => this.member.launch(workflow));
      // a workflow paused meanwhile (or when this executor joined) starts paused
      if (this.desired.get(workflow)?.state === 'PAUSED') await run.pause();
      this.options.logger.info({ workflow, generation, startedBy: wanted.by }, 'workflow joined: started on this executor too');
    } catch (error) {
      const part = this.parts.get(workflow);
      if (part === undefined || part.generation !== generation) return;
      const again = passing(error) && !this.closing.called;
      part.failure = { state: again ? 'STARTING' : 'FAILED', error: errorText(error), at: new Date() };
      void this.publish(workflow);
      if (!again) {
        this.options.logger.error({ workflow, generation, error: errorText(error) }, 'workflow did not start on this executor');
        return;
      }
      part.retry = setTimeout(
        () => {
          void this.lock.run(workflow, async () => {
            const now = this.desired.get(workflow);
            if (now?.generation === generation && now.state !== 'STOPPED') await this.follow(wanted, attempt + 1);
          });
        },
        restartDelayMs(RETRY, attempt),
      );
      part.retry.unref();
    }
  }

  /** Starts this executor's run of a generation and follows its state on the status board. */
  private async launchPart(workflow: string, generation: string, launch: () => Promise<WorkflowRun>): Promise<WorkflowRun> {
    const previous = this.parts.get(workflow);
    // this executor runs it already: the launch refuses, and its part stays as it is
    const busy: readonly RunState[] = ['STARTING', 'RUNNING', 'PAUSED', 'STOPPING'];
    if (previous?.run !== undefined && busy.includes(previous.run.state)) return launch();
    const part: LocalPart = { generation };
    clearTimeout(previous?.retry);
    this.parts.set(workflow, previous?.run === undefined ? part : { ...part, run: previous.run });
    let run: WorkflowRun;
    try {
      run = await launch();
    } catch (error) {
      const failed = this.parts.get(workflow);
      if (failed?.generation === generation) failed.failure = { state: 'FAILED', error: errorText(error), at: new Date() };
      void this.publish(workflow);
      throw error;
    }
    this.parts.set(workflow, { generation, run });
    run.subscribe((event) => {
      if (event.component === undefined) void this.publish(workflow);
    });
    void this.publish(workflow);
    return run;
  }

  private async halt(run: WorkflowRun, drainTimeoutMs: number, why: string): Promise<void> {
    const drained = await run.stop(drainTimeoutMs);
    this.options.logger.info({ workflow: run.workflow.name, runId: run.runId, drained, why }, 'workflow stopped on this executor');
  }

  /** This executor's row of a workflow. */
  private rowOf(workflow: string): ExecutorRunStatus | undefined {
    const part = this.parts.get(workflow);
    if (part === undefined) return undefined;
    const base = { executorId: this.options.executorId, workflow, generation: part.generation, updatedAt: new Date().toISOString() };
    const { run, failure } = part;
    // a failure newer than the run (a later generation that did not start) is what this executor shows
    if (failure !== undefined && (run === undefined || run.startedAt < failure.at)) {
      return { ...base, runId: '', state: failure.state, error: failure.error, startedAt: failure.at.toISOString(), components: [] };
    }
    if (run === undefined) return { ...base, runId: '', state: 'STARTING', error: '', startedAt: base.updatedAt, components: [] };
    return { ...base, runId: run.runId, state: run.state, error: run.error, startedAt: run.startedAt.toISOString(), components: run.counters() };
  }

  private async publish(workflow: string): Promise<void> {
    const row = this.rowOf(workflow);
    if (row === undefined || this.closing.called) return;
    await this.board.write(row).catch((error: unknown) => this.options.logger.debug({ workflow, error: errorText(error) }, 'executor status not written'));
  }

  /**
   * Rewrites the rows of the workflows the cluster runs (a failed part stays shown) and of parts still under way; the
   * last row of a part that ended in a stopped workflow (written when it ended) expires by itself.
   */
  private async beat(): Promise<void> {
    const underWay: readonly RunState[] = ['STARTING', 'RUNNING', 'PAUSED', 'STOPPING'];
    const current = [...this.parts].filter(
      ([workflow]) => this.desired.get(workflow)?.state !== 'STOPPED' || underWay.includes(this.rowOf(workflow)?.state ?? 'STOPPED'),
    );
    await Promise.all(current.map(([workflow]) => this.publish(workflow)));
  }

  private async shutdown(): Promise<void> {
    this.lifecycle.to('closing');
    this.stopWatching();
    this.peers.close();
    clearInterval(this.heartbeat);
    for (const part of this.parts.values()) clearTimeout(part.retry);
    // this executor's rows go at once rather than when their time runs out
    await Promise.all([...this.parts.keys()].map((workflow) => this.board.remove(workflow, this.options.executorId).catch(() => undefined)));
    this.lifecycle.to('closed');
  }
}

/** Every executor of the cluster with a part of a workflow now or lately (the status board's rows), `own` included. */
async function clusterOf(board: ExecutorStatusBoard, own: string): Promise<string[]> {
  return [...new Set([...(await board.executorIds()), own])].sort();
}

/** A failure that passes by itself: a service or NATS not reachable yet, or this process's own server not listening yet. */
function passing(error: unknown): boolean {
  if (error instanceof ServerStateError) return true;
  if (isServiceError(error)) return error.code === grpcStatus.UNAVAILABLE || error.code === grpcStatus.DEADLINE_EXCEEDED;
  return error instanceof LoomError && error.kind === 'unavailable';
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
