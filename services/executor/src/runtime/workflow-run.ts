import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ComponentInstance, FailedPreconditionError, instanceNamed, NotFoundError, type WorkflowConfiguration } from '@loom/domain';
import { Lifecycle, type TransitionTable, withResolvers } from '@loom/foundation';
import { type SourceConsumer } from '@loom/messaging';
import { type ComponentContext, ComponentFailedError, type Emit, type LoomMessage, type Options, type SignalSource } from './component.js';
import { ComponentError } from './component-error.js';
import { MessageFlow } from './message-flow.js';
import { type RunOptions, runSettings, type RunSettings } from './options.js';
import { buildGraph, type ComponentCounters, type InletNode, type RunNode, type SourceNode } from './run-graph.js';
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

/** What became of a published message. */
export type PublishOutcome = 'accepted' | 'duplicate';

/** How many client-chosen message ids each inlet remembers for de-duplication (per run). */
export const DEDUP_WINDOW = 65_536;

/**
 * One run of a workflow: components joined by bounded queues (run-graph.ts), messages moved through them by its
 * MessageFlow (message-flow.ts), counters, and an end. The ending verbs, each doing one thing, each idempotent:
 * - `stop(drainTimeoutMs)` (public): stop taking input, let what is in flight drain, close; ends STOPPED.
 * - `fail(error)`: a component died; stop taking input, close without a drain; ends FAILED with the error.
 * - `stopInput()`: stops every source, once; later calls answer the same promise.
 * - `close()`: releases what the run holds (aborts the work in flight, closes the queues, waits for the workers,
 *   hands the unfinished durable deliveries back to JetStream, closes every processor, removes the private
 *   directory), once.
 * In durable mode (`RunOptions.durable`) the sources' messages are stored in JetStream and come back through one
 * durable consumer per source (`startIntakes`); stopping input stops the sources, then the consumers.
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
  /** Per inlet: client-chosen ids accepted (true) or being published (their promise), oldest first (in-memory mode). */
  private readonly recentIds = new Map<string, Map<string, Promise<void> | true>>();
  /** Durable mode: each source's durable consumer and the loop that takes its deliveries into the run. */
  private readonly intakes: { readonly consumer: SourceConsumer; readonly taking: Promise<void> }[] = [];
  /** While paused: what the sources' messages wait for (released by resume, refused by the run's end). */
  private pauseGate: { readonly opened: Promise<void>; readonly open: () => void; readonly refuse: (error: Error) => void } | undefined;
  /** Durable mode: tells JetStream, every so often, that the deliveries in the run are still being worked on. */
  private progress: NodeJS.Timeout | undefined;

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
      report: (error) => this.emitEvent({ time: new Date(), state: this.lifecycle.state, component: error.component, error: error.message, failure: error }),
      fail: (error) => this.fail(error),
      durable: options.durable,
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
      await run.startIntakes();
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

  /** True in durable mode: its messages are stored in JetStream before they are answered. */
  get durable(): boolean {
    return this.options.durable !== undefined;
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
   * Hands a message to an inlet source; resolves once its first queue accepted it (waits while
   * full). With `clientId`, the message's id was chosen by the caller and de-duplicates: an id the
   * inlet accepted among its last DEDUP_WINDOW is answered 'duplicate' and not published again; a
   * publish of an id still in progress waits for that one's outcome. In durable mode it resolves
   * once JetStream stored the message instead, the message id being its JetStream message id: a
   * retry within the stream's duplicate window is answered 'duplicate'.
   */
  async publish(givenName: string, message: LoomMessage, withdrawal: SignalSource, clientId = false): Promise<PublishOutcome> {
    const inletName = this.inletName(givenName);
    const node = this.inletNode(inletName);
    const inlet = node.source;
    // a paused durable run still stores what is published: its stream holds it until the run resumes
    const open = this.lifecycle.is('RUNNING') || (this.lifecycle.is('PAUSED') && this.options.durable !== undefined);
    if (!open) throw new FailedPreconditionError(`workflow '${this.workflow.name}' is ${this.lifecycle.state}, not RUNNING`);
    // durable mode: answered once JetStream stored it, and JetStream de-duplicates by the message id
    if (this.options.durable !== undefined) return (await this.flow.store(node, message)) ? 'duplicate' : 'accepted';
    if (!clientId) {
      await inlet.publish(message, withdrawal);
      return 'accepted';
    }
    let recent = this.recentIds.get(inletName);
    if (recent === undefined) {
      recent = new Map();
      this.recentIds.set(inletName, recent);
    }
    const earlier = recent.get(message.id);
    if (earlier === true) return 'duplicate';
    if (earlier !== undefined) {
      // the same id is being published right now: it is a duplicate once that one is accepted, and tried again if it is not
      return earlier.then(
        () => 'duplicate',
        () => this.publish(inletName, message, withdrawal, clientId),
      );
    }
    const pending = inlet.publish(message, withdrawal);
    recent.set(message.id, pending);
    try {
      await pending;
    } catch (error) {
      recent.delete(message.id);
      throw error;
    }
    recent.set(message.id, true);
    if (recent.size > DEDUP_WINDOW) {
      // Maps iterate in insertion order: the first key is the oldest id
      for (const [oldest, state] of recent) {
        if (state === true) {
          recent.delete(oldest);
          break;
        }
      }
    }
    return 'accepted';
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

  /** Throws NOT_FOUND unless this run has an inlet source of this name. */
  checkInlet(inletName: string): void {
    this.inletNode(inletName);
  }

  /**
   * Pauses a running run: its sources' messages wait (a timer's tick, a file's next message) and, in durable mode,
   * its consumers stop taking stored messages (those fetched and not yet taken go back to JetStream); what is in
   * flight finishes. A publish to an inlet is refused in memory and stored in durable mode. Resolves once the
   * consumers stopped; a run that is not RUNNING is left as it is.
   */
  async pause(): Promise<void> {
    if (!this.lifecycle.is('RUNNING')) return;
    const { promise: opened, resolve: open, reject: refuse } = withResolvers();
    // a refusal nobody waits for is not an unhandled rejection
    opened.catch(() => undefined);
    this.pauseGate = { opened, open, refuse };
    this.setState('PAUSED');
    const paused = this.intakes.splice(0);
    await Promise.allSettled(paused.map(({ consumer }) => consumer.stop()));
    await Promise.allSettled(paused.map(({ taking }) => taking));
  }

  /** Resumes a paused run: its consumers take stored messages again and its sources' waiting messages go on. */
  async resume(): Promise<void> {
    if (!this.lifecycle.is('PAUSED')) return;
    await this.consumeSources();
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

  /** Stops every source, then (durable mode) every consumer, once: nothing more enters the run. */
  private stopInput(): Promise<void> {
    this.inputStopped ??= Promise.allSettled([...this.nodes.values()].flatMap((node) => (node.kind === 'processor' ? [] : [node.source.stop()]))).then(
      async () => {
        await Promise.allSettled(this.intakes.map(({ consumer }) => consumer.stop()));
        await Promise.allSettled(this.intakes.map(({ taking }) => taking));
      },
    );
    return this.inputStopped;
  }

  /** Releases what the run holds, once: aborts what is in flight, closes the queues, waits for the workers, closes the processors, removes the private directory. */
  private close(): Promise<void> {
    this.closed ??= this.release();
    return this.closed;
  }

  private async release(): Promise<void> {
    this.controller.abort();
    const processors = [...this.nodes.values()].flatMap((node) => (node.kind === 'processor' ? [node] : []));
    for (const node of processors) node.queue.close();
    await Promise.allSettled(processors.flatMap((node) => node.workers));
    clearInterval(this.progress);
    const abandoned = this.flow.abandonUnfinished();
    if (abandoned > 0) {
      this.options.logger.info(
        { workflow: this.workflow.name, runId: this.runId, messages: abandoned },
        'unfinished stored messages left to be delivered again',
      );
    }
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
      logger: this.options.logger.child({ workflow: this.workflow.name, component: instance.name }),
      signal: this.controller.signal,
      dryRun: this.settings.dryRun,
      privateDirectory: () => this.privateDirectory(),
      workflowSkills: this.workflow.skills,
      fail: (error) => this.fail(new ComponentError(instance.name, errorText(error), true, { cause: error })),
    };
  }

  /**
   * Durable mode: makes sure of the workflow's stream (a subject per source) and takes each source's stored messages
   * into the run through its durable consumer, until the run stops input. A consumer that breaks fails the run.
   */
  private async startIntakes(): Promise<void> {
    const durable = this.options.durable;
    if (durable === undefined) return;
    const sources = [...this.nodes.values()].flatMap((node) => (node.kind === 'processor' ? [] : [node]));
    await durable.prepare(sources.map((node) => node.instance.name));
    this.progress = setInterval(() => this.flow.touchUnfinished(), durable.progressEveryMs);
    this.progress.unref();
    await this.consumeSources();
  }

  /** Durable mode: takes each source's stored messages into the run through a consumer of its durable consumer. */
  private async consumeSources(): Promise<void> {
    const durable = this.options.durable;
    if (durable === undefined) return;
    for (const node of this.nodes.values()) {
      if (node.kind === 'processor') continue;
      const consumer = await durable.consume(node.instance.name);
      this.intakes.push({ consumer, taking: this.take(node, consumer) });
    }
  }

  /** Takes a source's deliveries into the run until its consumer is stopped; a consumer that ends or breaks otherwise fails the run. */
  private async take(node: SourceNode | InletNode, consumer: SourceConsumer): Promise<void> {
    let failure: unknown;
    try {
      for await (const delivery of consumer) await this.flow.enter(node, delivery);
    } catch (error) {
      failure = error;
    }
    if (consumer.state !== 'consuming') return;
    const reason = failure === undefined ? 'its stored messages are no longer delivered' : `its stored messages could not be consumed: ${errorText(failure)}`;
    this.fail(new ComponentError(node.instance.name, reason, true, failure === undefined ? {} : { cause: failure }));
  }

  private async startSources(): Promise<void> {
    for (const node of this.nodes.values()) {
      if (node.kind !== 'processor') await node.source.start(this.gated(this.flow.emitter(node)));
    }
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
