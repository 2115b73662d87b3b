import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ComponentInstance, FailedPreconditionError, instanceNamed, NotFoundError, plainInstanceName, type WorkflowConfiguration } from '@loom/domain';
import { Lifecycle, type TransitionTable, withResolvers } from '@loom/foundation';
import { type Settlement } from '@loom/messaging';
import { type ComponentContext, ComponentFailedError, type Emit, type LoomMessage, type Options, type SignalSource } from './component.js';
import { ComponentError } from './component-error.js';
import { Completions } from './completion.js';
import { type Intake, type PublishOutcome } from './intake.js';
import { memoryIntake } from './memory-intake.js';
import { MessageFlow } from './message-flow.js';
import { type RunOptions, runSettings, type RunSettings } from './options.js';
import { buildGraph, type ComponentCounters, type InletNode, type ProcessorNode, type RunNode } from './run-graph.js';
import { RunTracing } from './tracing.js';

/** Life cycle of a run, as in loom.v1.WorkflowState. */
export type RunState = 'STARTING' | 'RUNNING' | 'PAUSED' | 'STOPPING' | 'STOPPED' | 'FAILED';

/**
 * The moves a run makes. A start that fails ends FAILED at once; a running run may pause (PAUSED: its sources and
 * consumers take nothing new) and resume; a running or paused run stops (STOPPING)
 * either because it was asked to, ending STOPPED, or because a component died, ending FAILED.
 * STOPPED and FAILED are final: a run never starts again (a new start is a new run).
 */
export const RUN_TRANSITIONS: TransitionTable<RunState> = {
  STARTING: ['RUNNING', 'FAILED'],
  RUNNING: ['STOPPING', 'PAUSED'],
  PAUSED: ['RUNNING', 'STOPPING'],
  STOPPING: ['STOPPED', 'FAILED'],
  STOPPED: [],
  FAILED: [],
};

/** Whether a run in this state is over (STOPPED, FAILED): no move leaves it. */
export function isFinal(state: RunState): boolean {
  return RUN_TRANSITIONS[state].length === 0;
}

/** What WatchRun streams: a state change, or a component's error. */
export interface RunEvent {
  readonly time: Date;
  readonly state: RunState;
  readonly component?: string;
  /** The failure's message: a component's error, or why the run stopped or failed. */
  readonly error?: string;
  /** The typed failure behind `error` (kind, retryable, cause) when a component caused it; absent for a start that failed. */
  readonly failure?: ComponentError;
}

/**
 * One run of a workflow: components joined by bounded queues (run-graph.ts), messages moved through them by its
 * MessageFlow (message-flow.ts), counters, and an end. The ending verbs, each doing one thing, each idempotent:
 * - `stop(drainTimeoutMs)` (public): stop taking input, let what is in flight drain, close; ends STOPPED.
 * - `fail(error)`: a component died; stop taking input, close without a drain; ends FAILED with the error.
 * - `stopInput()`: stops every source, once; later calls answer the same promise.
 * - `close()`: releases what the run holds (aborts the work in flight, closes the queues, waits for the workers,
 *   has the intake hand back what it did not finish, closes every processor, removes the private directory), once.
 * Messages come in through its intake (intake.ts), chosen once from RunOptions.intake: held in memory, or stored in
 * JetStream and brought back by a consumer per source; stopping input stops the sources, then the intake.
 * So each source is stopped and each processor closed exactly once, however the run ends.
 */
export class WorkflowRun {
  readonly runId = randomUUID();
  readonly startedAt = new Date();
  private readonly lifecycle: Lifecycle<RunState>;
  private readonly settings: RunSettings;
  /** The end of the run once it began (a stop, or a component that died): every later stop answers this one. */
  private ending: Promise<boolean> | undefined;
  /** A component that died while the others were still starting: the start fails with it. */
  private startFailure: { readonly error: unknown } | undefined;
  private inputStopped: Promise<void> | undefined;
  private closed: Promise<void> | undefined;
  private readonly nodes = new Map<string, RunNode>();
  private readonly controller = new AbortController();
  private readonly listeners = new Set<(event: RunEvent) => void>();
  private lastError = '';
  private lastFailure: ComponentError | undefined;
  private readonly tracing: RunTracing;
  private readonly flow: MessageFlow;
  private privateDir: string | undefined;
  /** How its sources' messages come in: in memory, or stored in JetStream. */
  private readonly intake: Intake;
  /** Messages sent again from the failure store and not yet finished: abandoned (left in the store) when the run ends. */
  private readonly retries = new Completions();
  /** While paused: what the sources' messages wait for (released by resume, refused by the run's end). */
  private pauseGate: { readonly opened: Promise<void>; readonly open: () => void; readonly refuse: (error: Error) => void } | undefined;

  private constructor(
    readonly workflow: WorkflowConfiguration,
    private readonly options: RunOptions,
  ) {
    this.settings = runSettings(options);
    this.tracing = new RunTracing(workflow.name, this.runId, this.settings.messageSamplingRatio);
    this.lifecycle = new Lifecycle(`run ${this.runId} of workflow '${workflow.name}'`, RUN_TRANSITIONS, 'STARTING');
    this.flow = new MessageFlow({
      workflowName: workflow.name,
      logger: options.logger,
      tracing: this.tracing,
      signal: this.controller.signal,
      maxBatch: this.settings.maxBatch,
      onOutput: options.onOutput,
      onFailure: options.onFailure,
      trail: options.trail?.forRun(workflow.name, this.runId, options.workflowVersion ?? 0),
      keepFailed: options.keepFailed,
      report: (error) => this.emitEvent({ time: new Date(), state: this.lifecycle.state, component: error.component, error: error.message, failure: error }),
      fail: (error) => this.fail(error),
    });
    this.intake = (options.intake ?? memoryIntake)({
      workflowName: workflow.name,
      runId: this.runId,
      logger: options.logger,
      input: this.flow,
      sources: () => [...this.nodes.values()].flatMap((node) => (node.kind === 'processor' ? [] : [node])),
      checkTaking: (whilePaused) => {
        if (!this.lifecycle.is('RUNNING') && !(whilePaused && this.lifecycle.is('PAUSED'))) {
          throw new FailedPreconditionError(`workflow '${this.workflow.name}' is ${this.lifecycle.state}, not RUNNING`);
        }
      },
      fail: (error) => this.fail(error),
    });
  }

  /** Builds every component, wires the links, and starts the sources; on any failure closes what it built. */
  static async start(workflow: WorkflowConfiguration, options: RunOptions): Promise<WorkflowRun> {
    const run = new WorkflowRun(workflow, options);
    try {
      await buildGraph(
        workflow,
        { factories: options.factories, queueCapacity: run.settings.queueCapacity, contextOf: (...args) => run.contextOf(...args) },
        run.nodes,
      );
      for (const node of run.nodes.values()) if (node.kind === 'processor') run.flow.startWorkers(node);
      await run.intake.start();
      await run.startSources();
      if (run.startFailure !== undefined) throw run.startFailure.error;
    } catch (error) {
      await run.stopInput();
      await run.close();
      run.setState('FAILED', undefined, String(error instanceof Error ? error.message : error));
      run.tracing.end('FAILED', run.lastError);
      throw error;
    }
    run.setState('RUNNING');
    return run;
  }

  get state(): RunState {
    return this.lifecycle.state;
  }

  get error(): string {
    return this.lastError;
  }

  /** The component failure the run failed with, typed; undefined unless a component failed it. */
  get failure(): ComponentError | undefined {
    return this.lastFailure;
  }

  /** Whether a batch's publishes may all be sent before the first is answered (see Intake.concurrentPublishes). */
  get concurrentPublishes(): boolean {
    return this.intake.concurrentPublishes;
  }

  /** Counters of every component, in the workflow's order. */
  counters(): ComponentCounters[] {
    return [...this.nodes.values()].map((node) => ({ ...node.counters, queueDepth: node.kind === 'processor' ? node.queue.size : 0 }));
  }

  /** Subscribes to state changes and component errors; returns the unsubscribe function. */
  subscribe(listener: (event: RunEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Hands a message to an inlet source, as the run's intake takes it: in memory, resolves once its first queue accepted
   * it (waits while full), and with `clientId` (the message's id was chosen by the caller) an id the inlet accepted
   * among its last DEDUP_WINDOW is answered 'duplicate' and not published again; a paused run refuses it. Stored in
   * JetStream, resolves once stored, the message id being its JetStream message id: a retry within the stream's
   * duplicate window is answered 'duplicate'; a paused run still stores it. Either way a run that is not running is
   * a FailedPreconditionError, an inlet it does not have NOT_FOUND.
   */
  async publish(givenName: string, message: LoomMessage, withdrawal: SignalSource, clientId = false): Promise<PublishOutcome> {
    return this.intake.publish(this.inletNode(givenName), message, withdrawal, clientId);
  }

  /** The instance name of an inlet given by it or by its plain name (`Documents`, as a compact file names it): see instanceNamed. */
  private inletName(given: string): string {
    const inlets = [...this.nodes].filter(([, node]) => node.kind === 'inlet').map(([name]) => name);
    return instanceNamed(given, inlets) ?? given;
  }

  /** The inlet source of this name (or plain name, see inletName), or NOT_FOUND. */
  private inletNode(givenName: string): InletNode {
    const inletName = this.inletName(givenName);
    const node = this.nodes.get(inletName);
    if (node?.kind !== 'inlet') throw new NotFoundError(`inlet source of workflow '${this.workflow.name}'`, inletName);
    return node;
  }

  /**
   * Sends a message kept in the failure store again, into the queue of the component that failed it (by instance or
   * plain name), in this run's version; resolves once queued. `settlement` hears what became of it: ack once all it led
   * to is finished, term when it failed for good again (kept again by then), nak when the run ended first. A run that is
   * not RUNNING is a FailedPreconditionError; a component this version no longer has (or one that takes no messages) too.
   */
  async retryAt(component: string, message: LoomMessage, settlement: Settlement): Promise<void> {
    const node = this.checkRetryTarget(component);
    const ticket = this.retries.ticket(settlement, (reason) => settlement.term(reason));
    await this.flow.reenter(node, message, ticket);
  }

  /** The component a retry at `component` reaches; a FailedPreconditionError as for retryAt when there is none (or the run is not RUNNING). */
  checkRetryTarget(component: string): ProcessorNode {
    if (!this.lifecycle.is('RUNNING')) throw new FailedPreconditionError(`workflow '${this.workflow.name}' is ${this.lifecycle.state}, not RUNNING`);
    const processors = [...this.nodes].filter(([, node]) => node.kind === 'processor').map(([name]) => name);
    const node = this.nodes.get(instanceNamed(component, processors) ?? component);
    if (node?.kind !== 'processor') {
      const plain = plainInstanceName(this.workflow.name, 'component', component);
      throw new FailedPreconditionError(`component '${plain}' is no longer a component of workflow '${this.workflow.name}' that takes messages`);
    }
    return node;
  }

  /** Throws NOT_FOUND unless this run has an inlet source of this name. */
  checkInlet(inletName: string): void {
    this.inletNode(inletName);
  }

  /**
   * Pauses a running run: its sources' messages wait (a timer's tick, a file's next message) and its intake stops
   * bringing stored messages in (JetStream's consumers stop; those fetched and not yet taken go back to JetStream); what
   * is in flight finishes. A publish to an inlet is refused in memory and stored in JetStream. Resolves once the
   * intake paused; a run that is not RUNNING is left as it is.
   */
  async pause(): Promise<void> {
    if (!this.lifecycle.is('RUNNING')) return;
    const { promise: opened, resolve: open, reject: refuse } = withResolvers();
    // a refusal nobody waits for is not an unhandled rejection
    opened.catch(() => undefined);
    this.pauseGate = { opened, open, refuse };
    this.setState('PAUSED');
    await this.intake.pause();
  }

  /** Resumes a paused run: its intake brings stored messages in again and its sources' waiting messages go on. */
  async resume(): Promise<void> {
    if (!this.lifecycle.is('PAUSED')) return;
    await this.intake.resume();
    const gate = this.pauseGate;
    this.pauseGate = undefined;
    this.setState('RUNNING');
    gate?.open();
  }

  /** A source's emit that waits while the run is paused (one check of a field when it is not). */
  private gated(emit: Emit): Emit {
    return (message, withdrawal) => (this.pauseGate === undefined ? emit(message, withdrawal) : this.pauseGate.opened.then(() => emit(message, withdrawal)));
  }

  /**
   * Stops taking input, lets in-flight messages drain for at most `drainTimeoutMs`, then closes the run. Resolves
   * with whether everything drained. Every call answers the same end: a second stop, or a stop of a run that is
   * failing, waits for that one; a run that has ended answers true.
   */
  stop(drainTimeoutMs: number): Promise<boolean> {
    if (this.ending === undefined && this.lifecycle.is('RUNNING', 'PAUSED')) this.ending = this.end(drainTimeoutMs, undefined);
    return this.ending ?? Promise.resolve(true);
  }

  /**
   * A component died outside a single message: a running run ends at once (no drain) FAILED, the reason in its
   * status and in WatchRun; while starting, the start fails with it. Once the run is ending, only logged.
   */
  private fail(error: ComponentError): void {
    const reason = `component '${error.component}' failed: ${error.message}`;
    if (this.lifecycle.is('STARTING')) {
      this.startFailure ??= { error: error.cause instanceof Error ? error.cause : new ComponentFailedError(reason, { cause: error }) };
      return;
    }
    const context = { workflow: this.workflow.name, runId: this.runId, reason, kind: error.kind };
    if (this.ending !== undefined || !this.lifecycle.is('RUNNING', 'PAUSED')) {
      this.options.logger.warn({ ...context, state: this.lifecycle.state }, 'a component failed while the run was already ending');
      return;
    }
    this.options.logger.error(context, 'workflow run failed');
    this.ending = this.end(0, { reason, error });
  }

  /** The one ending of a running run: STOPPING, input stopped, a drain (none when failing), closed, then STOPPED or FAILED. */
  private async end(drainTimeoutMs: number, failure: { readonly reason: string; readonly error: ComponentError } | undefined): Promise<boolean> {
    // before the first await: a stop and a failure at the same moment find the run STOPPING
    this.setState('STOPPING', undefined, failure?.reason, failure?.error);
    // sources waiting in a pause give up their messages, so they can stop
    this.pauseGate?.refuse(new FailedPreconditionError(`workflow '${this.workflow.name}' is stopping`));
    this.pauseGate = undefined;
    await this.stopInput();
    const drained = failure === undefined ? await this.flow.drained(drainTimeoutMs) : this.flow.pending === 0;
    if (!drained) {
      this.options.logger.warn(
        { workflow: this.workflow.name, inFlight: this.flow.pending, drainTimeoutMs: failure === undefined ? drainTimeoutMs : 0 },
        failure === undefined ? 'stop: messages still in flight at the drain deadline' : 'run failed: messages in flight abandoned',
      );
    }
    await this.close();
    const final: RunState = failure === undefined ? 'STOPPED' : 'FAILED';
    this.setState(final, undefined, failure?.reason, failure?.error);
    this.tracing.end(final, failure?.reason ?? (drained ? undefined : 'messages were still in flight at the drain deadline'));
    return drained;
  }

  /** Stops every source, then the intake, once: nothing more enters the run. */
  private stopInput(): Promise<void> {
    this.inputStopped ??= Promise.allSettled([...this.nodes.values()].flatMap((node) => (node.kind === 'processor' ? [] : [node.source.stop()]))).then(() =>
      this.intake.stopInput(),
    );
    return this.inputStopped;
  }

  /**
   * Releases what the run holds, once: aborts what is in flight, closes the queues, waits for the workers, has the
   * intake hand back what was not finished, closes the processors, removes the private directory.
   */
  private close(): Promise<void> {
    this.closed ??= this.release();
    return this.closed;
  }

  private async release(): Promise<void> {
    this.controller.abort();
    const processors = [...this.nodes.values()].flatMap((node) => (node.kind === 'processor' ? [node] : []));
    for (const node of processors) node.queue.close();
    await Promise.allSettled(processors.flatMap((node) => node.workers));
    this.intake.close();
    this.retries.abandonAll();
    for (const node of processors) {
      await node.processor
        .close()
        .catch((error: unknown) => this.options.logger.warn({ component: node.instance.name, error: String(error) }, 'component did not close cleanly'));
    }
    if (this.privateDir !== undefined) rmSync(this.privateDir, { recursive: true, force: true });
    this.privateDir = undefined;
  }

  /** The run's private temp directory (scripts may write only there), made at first use. */
  private privateDirectory(): string {
    this.privateDir ??= mkdtempSync(join(tmpdir(), 'loom-workflow-'));
    return this.privateDir;
  }

  /** Moves the run along RUN_TRANSITIONS (IllegalTransitionError otherwise) and tells the watchers. */
  private setState(state: RunState, component?: string, error?: string, failure?: ComponentError): void {
    this.lifecycle.to(state);
    if (error !== undefined) this.lastError = error;
    if (failure !== undefined) this.lastFailure = failure;
    this.emitEvent({
      time: new Date(),
      state,
      ...(component === undefined ? {} : { component }),
      ...(error === undefined ? {} : { error }),
      ...(failure === undefined ? {} : { failure }),
    });
  }

  private emitEvent(event: RunEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  /** What the component of this instance is built with. */
  private contextOf(instance: ComponentInstance, options: Options): ComponentContext {
    return {
      name: instance.name,
      instance,
      options,
      resource: instance.resource ?? undefined,
      workflowResources: [...this.workflow.resources, ...this.workflow.workflowResources],
      workflowName: this.workflow.name,
      workflowVersion: this.options.workflowVersion ?? 0,
      logger: this.options.logger.child({ workflow: this.workflow.name, component: instance.name }),
      signal: this.controller.signal,
      dryRun: this.settings.dryRun,
      privateDirectory: () => this.privateDirectory(),
      workflowSkills: this.workflow.skills,
      fail: (error) => this.fail(new ComponentError(instance.name, errorText(error), true, { cause: error })),
    };
  }

  private async startSources(): Promise<void> {
    for (const node of this.nodes.values()) {
      if (node.kind !== 'processor') await node.source.start(this.gated(this.intake.emitter(node)));
    }
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
