import { randomUUID } from 'node:crypto';
import { ExecutorService, type WatchRunResponse, WorkflowState } from '@loom/contracts';
import { FailedPreconditionError, NotFoundError } from '@loom/domain';
import { type AsyncImplementation, type ServiceInstance, type ServiceModule, unimplemented } from '@loom/service-kit';
import { FIRE_KIND_HEADER, SCHEDULED_AT_HEADER } from '../src/index.js';

/** One run of the fake: when it began and ended, and the fire that started it. */
export interface FakeRun {
  readonly name: string;
  readonly runId: string;
  readonly startedAt: number;
  endedAt: number | undefined;
  state: WorkflowState;
  readonly scheduledAt: string | undefined;
  readonly kind: string | undefined;
  timer?: NodeJS.Timeout;
}

/** A StartWorkflow the fake refused, and when. */
export interface RefusedStart {
  readonly name: string;
  readonly at: number;
}

/** A trigger message a fire published, and when. */
export interface Publish {
  readonly name: string;
  readonly inlet: string;
  readonly body: Record<string, unknown>;
  readonly messageId: string;
  readonly at: number;
}

/** How the fake runs a workflow. */
export interface FakeBehaviour {
  /** How long a run lasts before it ends STOPPED; forever when absent. */
  runMs?: number;
  /** Starts to refuse before one succeeds (a workflow that throws at start). */
  failStarts?: number;
}

/**
 * A hand-written executor on real gRPC: one run per workflow as loom's executor keeps it, runs that end by themselves
 * after `runMs`, starts that fail on request, and a record of every start, refusal and publish.
 */
export class FakeExecutor {
  /** `now`: where start, end and publish times are read (the test's ManualClock, or the wall clock). */
  constructor(private readonly now: () => number = Date.now) {}

  readonly runs: FakeRun[] = [];
  readonly refused: RefusedStart[] = [];
  readonly publishes: Publish[] = [];
  private readonly behaviours = new Map<string, FakeBehaviour>();
  private readonly watchers = new Set<(run: FakeRun) => void>();

  /** Sets how a workflow behaves from now on. */
  behave(name: string, behaviour: FakeBehaviour): void {
    this.behaviours.set(name, { ...behaviour });
  }

  /** The latest run of a workflow. */
  current(name: string): FakeRun | undefined {
    return this.runs.filter((run) => run.name === name).at(-1);
  }

  /** Every run of a workflow, in start order. */
  runsOf(name: string): FakeRun[] {
    return this.runs.filter((run) => run.name === name);
  }

  private end(run: FakeRun, state: WorkflowState): void {
    if (run.endedAt !== undefined) return;
    clearTimeout(run.timer);
    run.endedAt = this.now();
    run.state = state;
    for (const watcher of this.watchers) watcher(run);
  }

  /** Ends a workflow's run as STOPPED, as a run whose work is done would. */
  complete(name: string): void {
    const run = this.current(name);
    if (run !== undefined) this.end(run, WorkflowState.WORKFLOW_STATE_STOPPED);
  }

  /** Ends a workflow's run as FAILED, as a run whose component broke would. */
  fail(name: string): void {
    const run = this.current(name);
    if (run !== undefined) this.end(run, WorkflowState.WORKFLOW_STATE_FAILED);
  }

  /** Forgets every run, as a restarted executor would: open WatchRun streams end, statuses answer NOT_FOUND. */
  restart(): void {
    const runs = this.runs.splice(0);
    for (const run of runs) clearTimeout(run.timer);
    this.forgotten.push(...runs);
    for (const end of this.streamEnds) end();
  }

  /** Runs of before the last restart. */
  readonly forgotten: FakeRun[] = [];
  private readonly streamEnds = new Set<() => void>();
  private readonly watchedRuns = new Set<FakeRun>();

  /** True while a WatchRun stream follows this run (a restart() ends it; one that starts later finds no run). */
  isWatched(run: FakeRun | undefined): boolean {
    return run !== undefined && this.watchedRuns.has(run);
  }

  /** Ends every run (test clean-up). */
  stopAll(): void {
    for (const run of this.runs) this.end(run, WorkflowState.WORKFLOW_STATE_STOPPED);
  }

  private running(name: string): FakeRun {
    const run = this.current(name);
    if (run === undefined) throw new NotFoundError('run on this executor of workflow', name);
    return run;
  }

  private implementation(): AsyncImplementation<typeof ExecutorService> {
    const refuse = unimplemented(ExecutorService, {
      startWorkflow: '',
      stopWorkflow: '',
      pauseWorkflow: 'not faked',
      resumeWorkflow: 'not faked',
      getWorkflowStatus: '',
      publishMessage: '',
      publishMessages: 'not faked',
      publishStream: 'not faked',
      dryRun: 'not faked',
      watchRun: '',
      listComponentDefinitions: 'not faked',
      queryGraph: 'not faked',
      readGraph: 'not faked',
      describeGraph: 'not faked',
      replayMessages: 'not faked',
      traceMessage: 'not faked',
      listFailedMessages: 'not faked',
      getFailedMessage: 'not faked',
      retryFailedMessages: 'not faked',
      discardFailedMessages: 'not faked',
    });
    return {
      ...refuse,
      startWorkflow: (request, context) => {
        const behaviour = this.behaviours.get(request.name) ?? {};
        const current = this.current(request.name);
        if (current !== undefined && current.endedAt === undefined) {
          // as the executor answers a start of a running workflow: OK with that run
          return Promise.resolve({ runId: current.runId, state: current.state, alreadyRunning: true });
        }
        if ((behaviour.failStarts ?? 0) > 0) {
          behaviour.failStarts = (behaviour.failStarts ?? 0) - 1;
          this.refused.push({ name: request.name, at: this.now() });
          return Promise.reject(new FailedPreconditionError(`webhook: cannot listen on port 8101 (EADDRINUSE)`));
        }
        const header = (key: string): string | undefined => {
          const [value] = context.metadata.get(key);
          return typeof value === 'string' ? value : undefined;
        };
        const run: FakeRun = {
          name: request.name,
          runId: randomUUID(),
          startedAt: this.now(),
          endedAt: undefined,
          state: WorkflowState.WORKFLOW_STATE_RUNNING,
          scheduledAt: header(SCHEDULED_AT_HEADER),
          kind: header(FIRE_KIND_HEADER),
        };
        this.runs.push(run);
        if (behaviour.runMs !== undefined) run.timer = setTimeout(() => this.end(run, WorkflowState.WORKFLOW_STATE_STOPPED), behaviour.runMs);
        return Promise.resolve({ runId: run.runId, state: run.state, alreadyRunning: false });
      },
      stopWorkflow: (request) => {
        const run = this.running(request.name);
        this.end(run, WorkflowState.WORKFLOW_STATE_STOPPED);
        return Promise.resolve({ state: run.state });
      },
      getWorkflowStatus: (request) => {
        const run = this.running(request.name);
        return Promise.resolve({
          name: run.name,
          runId: run.runId,
          state: run.state,
          startedAt: new Date(run.startedAt),
          components: [],
          lastError: '',
          executors: [],
          executorId: '',
        });
      },
      publishMessage: (request) => {
        const run = this.running(request.workflowName);
        if (run.endedAt !== undefined) return Promise.reject(new FailedPreconditionError(`workflow '${request.workflowName}' is STOPPED, not RUNNING`));
        this.publishes.push({ name: request.workflowName, inlet: request.inlet, body: request.body ?? {}, messageId: request.messageId, at: this.now() });
        return Promise.resolve({ messageId: request.messageId, duplicate: false });
      },
      watchRun: async (request, send, context) => {
        const run = this.running(request.name);
        const event = (state: WorkflowState): WatchRunResponse => ({
          time: new Date(),
          runId: run.runId,
          state,
          component: '',
          error: '',
          executorId: '',
          executors: [],
          components: [],
        });
        await send(event(run.state));
        if (run.endedAt !== undefined) return;
        await new Promise<void>((resolve) => {
          const watcher = (ended: FakeRun): void => {
            if (ended !== run) return;
            this.watchers.delete(watcher);
            void send(event(ended.state)).then(resolve);
          };
          this.watchers.add(watcher);
          const end = (): void => {
            this.watchers.delete(watcher);
            this.streamEnds.delete(end);
            this.watchedRuns.delete(run);
            resolve();
          };
          this.streamEnds.add(end);
          this.watchedRuns.add(run);
          context.signal.addEventListener('abort', end);
        });
      },
    };
  }

  /** The fake as a service module named `executor`, served beside the scheduler. */
  module(): ServiceModule {
    return {
      name: 'executor',
      fullName: 'loom.v1.Executor',
      configSections: [],
      create: (): Promise<ServiceInstance> =>
        Promise.resolve({
          addToServer: (server) => server.addService('loom.v1.Executor', ExecutorService, this.implementation()),
          close: () => {
            this.stopAll();
            return Promise.resolve();
          },
        }),
    };
  }
}
