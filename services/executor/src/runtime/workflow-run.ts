import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ComponentInstance, FailedPreconditionError, instanceNamed, NotFoundError, ValidationError, type WorkflowConfiguration } from '@loom/domain';
import { Lifecycle, type TransitionTable } from '@loom/foundation';
import { type Logger } from '@loom/telemetry';
import { BoundedQueue } from './bounded-queue.js';
import {
  type ComponentContext,
  ComponentFailedError,
  type ComponentFactory,
  type Inlet,
  type LoomMessage,
  type Outcome,
  type Processor,
  type SignalSource,
  type Source,
} from './component.js';
import { optionsOf } from './options.js';
import { endMessageSpan, outputOf, RunTracing } from './tracing.js';

/** Life cycle of a run, as in loom.v1.WorkflowState. */
export type RunState = 'STARTING' | 'RUNNING' | 'STOPPING' | 'STOPPED' | 'FAILED';

/**
 * The moves a run makes. A start that fails ends FAILED at once; a running run stops (STOPPING)
 * either because it was asked to, ending STOPPED, or because a component died, ending FAILED.
 * STOPPED and FAILED are final: a run never starts again (a new start is a new run).
 */
export const RUN_TRANSITIONS: TransitionTable<RunState> = {
  STARTING: ['RUNNING', 'FAILED'],
  RUNNING: ['STOPPING'],
  STOPPING: ['STOPPED', 'FAILED'],
  STOPPED: [],
  FAILED: [],
};

/** Counters of one component instance. */
export interface ComponentCounters {
  readonly name: string;
  messagesIn: number;
  messagesOut: number;
  messagesFailed: number;
  messagesRetried: number;
  queueDepth: number;
  lastError: string;
}

/** What WatchRun streams: a state change, or a component's error. */
export interface RunEvent {
  readonly time: Date;
  readonly state: RunState;
  readonly component?: string;
  readonly error?: string;
}

/** How a run is built and sized. */
export interface RunOptions {
  /** Component kinds by qualified name. */
  readonly factories: ReadonlyMap<string, ComponentFactory>;
  readonly logger: Logger;
  /** Messages each component's input queue holds before upstream waits. */
  readonly queueCapacity?: number;
  /** Most messages handed to one `process` call. */
  readonly maxBatch?: number;
  /** DryRun: components without side effects only; see dry-run.ts. */
  readonly dryRun?: boolean;
  /** Sees every message a processor emits, by component (DryRun records them). */
  readonly onOutput?: (component: string, message: LoomMessage) => void;
  /** Sees every failure that reached the end of its retries, by component. */
  readonly onFailure?: (component: string, message: LoomMessage, error: string) => void;
  /** Share of the messages a source makes that get a span per component, 0 to 1 (see tracing.ts); default 0. */
  readonly messageSamplingRatio?: number;
}

/** What became of a published message. */
export type PublishOutcome = 'accepted' | 'duplicate';

/** How many client-chosen message ids each inlet remembers for de-duplication (per run). */
export const DEDUP_WINDOW = 65_536;

export const DEFAULT_QUEUE_CAPACITY = 1024;
export const DEFAULT_MAX_BATCH = 256;
const MAX_CONCURRENCY = 64;

/** A component of the running graph. */
interface Node {
  readonly instance: ComponentInstance;
  readonly counters: ComponentCounters;
  readonly downstream: Node[];
  failureHandler: Node | undefined;
  readonly maxRetry: number;
  readonly delayMs: number;
  readonly storeError: boolean;
  readonly storeMessage: boolean;
  readonly concurrency: number;
  readonly queue: BoundedQueue<LoomMessage> | undefined;
  processor?: Processor;
  source?: Source;
  workers: Promise<void>[];
}

/** A workflow with no component that could start it. */
export class WorkflowRunError extends FailedPreconditionError {}

/**
 * One run of a workflow: components joined by bounded queues, a worker loop per processor (times
 * its `concurrency`), failure handling with retries and the failure handler, counters, and a
 * drain on stop. Nothing is dropped silently: a message either goes downstream, is filtered out
 * by its component, goes to the failure handler, or is counted as failed, logged and reported.
 */
export class WorkflowRun {
  readonly runId = randomUUID();
  readonly startedAt = new Date();
  private readonly lifecycle: Lifecycle<RunState>;
  /** The end of the run once it began (a stop, or a component that died): every later stop answers this one. */
  private ending: Promise<boolean> | undefined;
  /** A component that died while the others were still starting: the start fails with it. */
  private startFailure: { readonly error: unknown } | undefined;
  private readonly nodes = new Map<string, Node>();
  private readonly controller = new AbortController();
  private readonly listeners = new Set<(event: RunEvent) => void>();
  private inFlight = 0;
  private idle: (() => void) | undefined;
  private lastError = '';
  private readonly tracing: RunTracing;
  private privateDir: string | undefined;
  /** Per inlet: client-chosen ids accepted (true) or being published (their promise), oldest first. */
  private readonly recentIds = new Map<string, Map<string, Promise<void> | true>>();

  private constructor(
    readonly workflow: WorkflowConfiguration,
    private readonly options: RunOptions,
  ) {
    this.tracing = new RunTracing(workflow.name, this.runId, options.messageSamplingRatio ?? 0);
    this.lifecycle = new Lifecycle(`run ${this.runId} of workflow '${workflow.name}'`, RUN_TRANSITIONS, 'STARTING');
  }

  /** Builds every component, wires the links, and starts the sources; on any failure closes what it built. */
  static async start(workflow: WorkflowConfiguration, options: RunOptions): Promise<WorkflowRun> {
    const run = new WorkflowRun(workflow, options);
    try {
      await run.build();
      await run.startSources();
      if (run.startFailure !== undefined) throw run.startFailure.error;
    } catch (error) {
      await run.stopSources();
      await run.release();
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

  /** Counters of every component, in the workflow's order. */
  counters(): ComponentCounters[] {
    return [...this.nodes.values()].map((node) => ({ ...node.counters, queueDepth: node.queue?.size ?? 0 }));
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
   * publish of an id still in progress waits for that one's outcome.
   */
  async publish(givenName: string, message: LoomMessage, withdrawal: SignalSource, clientId = false): Promise<PublishOutcome> {
    const inletName = this.inletName(givenName);
    const inlet = this.inlet(inletName);
    if (!this.lifecycle.is('RUNNING')) throw new FailedPreconditionError(`workflow '${this.workflow.name}' is ${this.lifecycle.state}, not RUNNING`);
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
    const inlets = [...this.nodes].filter(([, node]) => node.source !== undefined && 'publish' in node.source).map(([name]) => name);
    return instanceNamed(given, inlets) ?? given;
  }

  /** The inlet source of this name (or plain name, see inletName), or NOT_FOUND. */
  private inlet(givenName: string): Inlet {
    const inletName = this.inletName(givenName);
    const node = this.nodes.get(inletName);
    if (node === undefined || node.source === undefined || !('publish' in node.source)) {
      throw new NotFoundError(`inlet source of workflow '${this.workflow.name}'`, inletName);
    }
    return node.source as Inlet;
  }

  /** Throws NOT_FOUND unless this run has an inlet source of this name. */
  checkInlet(inletName: string): void {
    this.inlet(inletName);
  }

  /**
   * Stops the sources, lets in-flight messages drain for at most `drainTimeoutMs`, then closes the
   * components. Resolves with whether everything drained. Every call answers the same end: a
   * second stop, or a stop of a run that is failing, waits for that one; a run that has ended
   * answers true.
   */
  stop(drainTimeoutMs: number): Promise<boolean> {
    if (this.ending === undefined && this.lifecycle.is('RUNNING')) this.ending = this.end(drainTimeoutMs, undefined);
    return this.ending ?? Promise.resolve(true);
  }

  /**
   * A component died outside a single message: a running run stops at once (no drain) and ends
   * FAILED with the reason in its status and in WatchRun; while starting, the start fails with it.
   */
  private failRun(reason: string, cause: unknown): void {
    if (this.lifecycle.is('STARTING')) {
      this.startFailure ??= { error: cause instanceof Error ? cause : new ComponentFailedError(reason) };
      return;
    }
    if (this.ending !== undefined || !this.lifecycle.is('RUNNING')) {
      this.options.logger.warn(
        { workflow: this.workflow.name, runId: this.runId, state: this.lifecycle.state, reason },
        'a component failed while the run was already ending',
      );
      return;
    }
    this.options.logger.error({ workflow: this.workflow.name, runId: this.runId, reason }, 'workflow run failed');
    this.ending = this.end(0, reason);
  }

  /** Ends a running run: STOPPING, sources stopped, drain (none when failing), components closed, then STOPPED or FAILED. */
  private async end(drainTimeoutMs: number, failure: string | undefined): Promise<boolean> {
    // before the first await: a stop and a failure at the same moment find the run STOPPING
    this.setState('STOPPING', undefined, failure);
    await this.stopSources();
    const drained = failure === undefined ? await this.drained(drainTimeoutMs) : this.inFlight === 0;
    if (!drained) {
      this.options.logger.warn(
        { workflow: this.workflow.name, inFlight: this.inFlight, drainTimeoutMs: failure === undefined ? drainTimeoutMs : 0 },
        failure === undefined ? 'stop: messages still in flight at the drain deadline' : 'run failed: messages in flight abandoned',
      );
    }
    await this.release();
    const final: RunState = failure === undefined ? 'STOPPED' : 'FAILED';
    this.setState(final, undefined, failure);
    this.tracing.end(final, failure ?? (drained ? undefined : 'messages were still in flight at the drain deadline'));
    return drained;
  }

  private async stopSources(): Promise<void> {
    await Promise.allSettled([...this.nodes.values()].flatMap((node) => (node.source === undefined ? [] : [node.source.stop()])));
  }

  /** Aborts what is in flight, closes the queues, waits for the workers, closes the components, removes the private directory. */
  private async release(): Promise<void> {
    this.controller.abort();
    for (const node of this.nodes.values()) node.queue?.close();
    await Promise.allSettled([...this.nodes.values()].flatMap((node) => node.workers));
    await this.closeComponents();
    this.removePrivateDirectory();
  }

  /** The run's private temp directory (scripts may write only there), made at first use. */
  private privateDirectory(): string {
    this.privateDir ??= mkdtempSync(join(tmpdir(), 'loom-workflow-'));
    return this.privateDir;
  }

  private removePrivateDirectory(): void {
    if (this.privateDir !== undefined) rmSync(this.privateDir, { recursive: true, force: true });
    this.privateDir = undefined;
  }

  /** Resolves once no message is in flight (true), or at the deadline (false). */
  private async drained(timeoutMs: number): Promise<boolean> {
    if (this.inFlight === 0) return true;
    const idle = new Promise<true>((resolve) => {
      this.idle = () => resolve(true);
    });
    const deadline = sleep(timeoutMs, false, { ref: false });
    return Promise.race([idle, deadline]);
  }

  /** Moves the run along RUN_TRANSITIONS (IllegalTransitionError otherwise) and tells the watchers. */
  private setState(state: RunState, component?: string, error?: string): void {
    this.lifecycle.to(state);
    if (error !== undefined) this.lastError = error;
    this.emitEvent({ time: new Date(), state, ...(component === undefined ? {} : { component }), ...(error === undefined ? {} : { error }) });
  }

  private emitEvent(event: RunEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private async build(): Promise<void> {
    const { factories, logger } = this.options;
    const capacity = this.options.queueCapacity ?? DEFAULT_QUEUE_CAPACITY;
    const creations: Promise<void>[] = [];
    try {
      for (const [index, instance] of this.workflow.components.entries()) {
        const factory = factories.get(instance.component.qualifiedName);
        if (factory === undefined) {
          throw new WorkflowRunError(
            `components[${index}] (${instance.name}): component kind ${instance.component.qualifiedName} cannot run in this executor yet`,
          );
        }
        const options = optionsOf(instance);
        const takesMessages = factory.kind === 'processor';
        const has = (name: string): boolean =>
          instance.component.options.some((option) => option.name === name) || instance.options.some((option) => option.name === name);
        const concurrency = has('concurrency') ? options.integer('concurrency') : 1;
        if (concurrency < 1 || concurrency > MAX_CONCURRENCY) {
          throw ValidationError.of(`components[${index}].options.concurrency`, `must be between 1 and ${MAX_CONCURRENCY}`, 'INVALID_VALUE');
        }
        const node: Node = {
          instance,
          counters: { name: instance.name, messagesIn: 0, messagesOut: 0, messagesFailed: 0, messagesRetried: 0, queueDepth: 0, lastError: '' },
          downstream: [],
          failureHandler: undefined,
          maxRetry: has('max_retry') ? options.integer('max_retry') : 0,
          delayMs: has('delay') ? options.integer('delay') : 0,
          storeError: has('store_error_content') ? options.boolean('store_error_content') : true,
          storeMessage: has('store_message_content') ? options.boolean('store_message_content') : true,
          concurrency,
          queue: takesMessages ? new BoundedQueue<LoomMessage>(`component '${instance.name}'`, capacity) : undefined,
          workers: [],
        };
        this.nodes.set(instance.name, node);
        const context: ComponentContext = {
          name: instance.name,
          instance,
          options,
          resource: instance.resource ?? undefined,
          workflowResources: [...this.workflow.resources, ...this.workflow.workflowResources],
          workflowName: this.workflow.name,
          logger: logger.child({ workflow: this.workflow.name, component: instance.name }),
          signal: this.controller.signal,
          dryRun: this.options.dryRun ?? false,
          privateDirectory: () => this.privateDirectory(),
          workflowSkills: this.workflow.skills,
          fail: (error) => this.failRun(`component '${instance.name}' failed: ${errorText(error)}`, error),
        };
        // components are built side by side: a Python interpreter or a graph connection takes a while to come up
        creations.push(
          factory.kind === 'processor'
            ? factory.create(context).then((processor) => void (node.processor = processor))
            : factory.create(context).then((source) => void (node.source = source)),
        );
      }
    } catch (error) {
      // a bad option of a later component: those already being built finish, so they can be closed
      await Promise.allSettled(creations);
      throw error;
    }
    // every creation settles before the first failure is thrown, so closeComponents sees all that were built
    const failure = (await Promise.allSettled(creations)).find((result) => result.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    for (const link of this.workflow.links) {
      const from = this.nodes.get(link.from);
      const to = this.nodes.get(link.to);
      if (from === undefined || to === undefined) throw new WorkflowRunError(`link ${link.from} → ${link.to} names no component of this workflow`);
      if (to.queue === undefined) throw new WorkflowRunError(`link ${link.from} → ${link.to}: ${link.to} is a source and takes no messages`);
      from.downstream.push(to);
    }
    for (const node of this.nodes.values()) {
      const handler = node.instance.options.find((option) => option.name === 'failure_handler')?.value;
      if (typeof handler === 'string' && handler !== '') {
        const target = this.nodes.get(handler);
        if (target?.queue === undefined)
          throw new WorkflowRunError(`${node.instance.name}: failure_handler '${handler}' names no component that takes messages`);
        node.failureHandler = target;
      }
    }
    for (const node of this.nodes.values()) {
      if (node.processor === undefined) continue;
      for (let worker = 0; worker < node.concurrency; worker++) node.workers.push(this.work(node, node.processor));
    }
  }

  private async startSources(): Promise<void> {
    for (const node of this.nodes.values()) {
      const source = node.source;
      if (source === undefined) continue;
      const name = node.instance.name;
      await source.start(async (message, withdrawal) => {
        const traced = this.tracing.emit(name, message);
        const sent = traced?.message ?? message;
        try {
          await this.forward(node.downstream, sent, withdrawal);
        } catch (error) {
          endMessageSpan(traced?.span, String(error instanceof Error ? error.message : error), 0);
          throw error;
        }
        endMessageSpan(traced?.span, undefined, 0);
        node.counters.messagesOut++;
        this.options.onOutput?.(name, sent);
      });
    }
  }

  /** Puts a message on every downstream queue, waiting while one is full; copies it for each extra branch. */
  private async forward(targets: readonly Node[], message: LoomMessage, withdrawal?: SignalSource): Promise<void> {
    // the withdrawal's signal and the combined one cost microseconds per message: read and made only when a queue is full
    // and the put must wait
    let abort: AbortSignal | undefined;
    for (const [index, target] of targets.entries()) {
      const copy = index === 0 ? message : structuredClone(message);
      const queue = target.queue as BoundedQueue<LoomMessage>;
      this.inFlight++;
      if (queue.tryPut(copy)) continue;
      abort ??= withdrawal === undefined ? this.controller.signal : AbortSignal.any([withdrawal.signal, this.controller.signal]);
      try {
        await queue.put(copy, abort);
      } catch (error) {
        this.settle(1);
        throw error;
      }
    }
  }

  private settle(count: number): void {
    this.inFlight -= count;
    if (this.inFlight === 0 && this.idle !== undefined) {
      const idle = this.idle;
      this.idle = undefined;
      idle();
    }
  }

  /** One worker of a processor: takes batches until the queue closes. */
  private async work(node: Node, processor: Processor): Promise<void> {
    const queue = node.queue as BoundedQueue<LoomMessage>;
    const maxBatch = this.options.maxBatch ?? DEFAULT_MAX_BATCH;
    for (;;) {
      const taken = await queue.take(processor.batching?.size ?? maxBatch, processor.batching?.gatherMs ?? 0);
      if (taken.length === 0) return;
      node.counters.messagesIn += taken.length;
      const traced = this.tracing.process(node.instance.name, taken);
      const batch = traced?.batch ?? taken;
      try {
        const { outcomes, retries } = await this.processWithRetries(node, processor, batch);
        for (const [index, result] of outcomes.entries()) {
          const message = batch[index] as LoomMessage;
          const span = traced?.spans[index];
          if (!result.ok && result.unreachable === true) {
            // what the component writes to stayed unreachable past max_retry: later messages would fare no better
            this.abandon(node, [message], result.error);
            this.failRun(`component '${node.instance.name}' failed: ${result.error} (still unreachable after ${node.maxRetry} retries)`, undefined);
          } else if (result.ok) {
            node.counters.messagesOut += result.outputs.length;
            for (const made of result.outputs) {
              const output = outputOf(made, span);
              this.options.onOutput?.(node.instance.name, output);
              await this.forward(node.downstream, output);
            }
          } else {
            await this.fail(node, message, result.error);
          }
          endMessageSpan(span, result.ok ? undefined : result.error, retries[index] ?? 0);
        }
      } catch (error) {
        if (error instanceof ComponentFailedError) {
          this.abandon(node, batch, error.message);
          this.failRun(`component '${node.instance.name}' failed: ${error.message}`, error);
        } else {
          // only a closed queue (the run is stopping past its deadline) gets here
          this.options.logger.warn({ workflow: this.workflow.name, component: node.instance.name, error: String(error) }, 'messages abandoned at stop');
        }
      } finally {
        this.settle(batch.length);
      }
    }
  }

  /** Runs a batch, retrying transient failures `max_retry` times `delay` ms apart; answers the outcomes and the retries of each message. */
  private async processWithRetries(node: Node, processor: Processor, batch: readonly LoomMessage[]): Promise<{ outcomes: Outcome[]; retries: number[] }> {
    const outcomes = await this.processOnce(processor, batch);
    const retries: number[] = [];
    for (let attempt = 1; attempt <= node.maxRetry; attempt++) {
      const retry = outcomes.flatMap((result, index) => (!result.ok && result.transient ? [index] : []));
      if (retry.length === 0) break;
      node.counters.messagesRetried += retry.length;
      for (const index of retry) retries[index] = attempt;
      if (node.delayMs > 0) await sleep(node.delayMs, undefined, { signal: this.controller.signal }).catch(() => undefined);
      const again = await this.processOnce(
        processor,
        retry.map((index) => batch[index] as LoomMessage),
      );
      retry.forEach((index, position) => (outcomes[index] = again[position] as Outcome));
    }
    return { outcomes, retries };
  }

  private async processOnce(processor: Processor, batch: readonly LoomMessage[]): Promise<Outcome[]> {
    try {
      const outcomes = await processor.process(batch, this.controller.signal);
      if (outcomes.length !== batch.length) {
        return batch.map(() => ({ ok: false, error: `component answered ${outcomes.length} outcomes for ${batch.length} messages`, transient: false }));
      }
      return [...outcomes];
    } catch (error) {
      // the component itself is gone: no retry helps, the run fails
      if (error instanceof ComponentFailedError) throw error;
      const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return batch.map(() => ({ ok: false, error: text, transient: true }));
    }
  }

  /** Messages the run cannot finish because their component died: counted as failed, reported and logged, not sent on. */
  private abandon(node: Node, messages: readonly LoomMessage[], error: string): void {
    node.counters.messagesFailed += messages.length;
    node.counters.lastError = error;
    // reported as any failure (a script component's is audited); not to the failure handler, whose queue is closing
    for (const message of messages) this.options.onFailure?.(node.instance.name, message, error);
    this.emitEvent({ time: new Date(), state: this.lifecycle.state, component: node.instance.name, error });
    this.options.logger.warn(
      { workflow: this.workflow.name, component: node.instance.name, messageIds: messages.map((message) => message.id), error },
      'messages failed with their component',
    );
  }

  /** A message failed for good: to the failure handler, or counted, logged and reported. */
  private async fail(node: Node, message: LoomMessage, error: string): Promise<void> {
    node.counters.messagesFailed++;
    node.counters.lastError = error;
    this.options.onFailure?.(node.instance.name, message, error);
    this.emitEvent({ time: new Date(), state: this.lifecycle.state, component: node.instance.name, error });
    if (node.failureHandler === undefined) {
      this.options.logger.warn(
        { workflow: this.workflow.name, component: node.instance.name, messageId: message.id, error },
        'message failed (no failure handler)',
      );
      return;
    }
    const body: Record<string, unknown> = { failedComponent: node.instance.name, messageId: message.id };
    if (node.storeError) body.error = error;
    if (node.storeMessage) body.message = { id: message.id, body: message.body, headers: message.headers };
    await this.forward([node.failureHandler], { id: randomUUID(), body, headers: { ...message.headers } });
  }

  private async closeComponents(): Promise<void> {
    for (const node of this.nodes.values()) {
      await node.source?.stop().catch(() => undefined);
      await node.processor
        ?.close()
        .catch((error: unknown) => this.options.logger.warn({ component: node.instance.name, error: String(error) }, 'component did not close cleanly'));
    }
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
