import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Logger } from '@loom/telemetry';
import { type Emit, ComponentFailedError, type LoomMessage, type Outcome, type SignalSource } from './component.js';
import { ComponentError } from './component-error.js';
import { type RunOptions } from './options.js';
import { type InletNode, type ProcessorNode, type RunNode, type SourceNode } from './run-graph.js';
import { endMessageSpan, outputOf, type RunTracing } from './tracing.js';

/** What the message path of a run takes from the run. */
export interface FlowParts {
  readonly workflowName: string;
  readonly logger: Logger;
  readonly tracing: RunTracing;
  /** Aborts when the run closes: waiting puts, retry delays and `process` calls end. */
  readonly signal: AbortSignal;
  /** Most messages handed to one `process` call when the component has no batching of its own. */
  readonly maxBatch: number;
  readonly onOutput: RunOptions['onOutput'];
  readonly onFailure: RunOptions['onFailure'];
  /** Tells the run's watchers of a component's error. */
  readonly report: (error: ComponentError) => void;
  /** A component died outside a single message: the run fails with it. */
  readonly fail: (error: ComponentError) => void;
}

/** A failed outcome. */
type Failed = Extract<Outcome, { ok: false }>;

/**
 * The path of messages through a run: from a source into the bounded queues, through each processor's workers with
 * retries, downstream or to the failure handler. It counts the messages in flight (`forward` adds one per queued copy,
 * `settle` takes them off once their component is done with them), so a stop can drain. Nothing is dropped silently: a
 * message goes downstream, is filtered out by its component, goes to the failure handler, or is counted as failed,
 * logged and reported.
 */
// Acknowledging each inlet message once everything it led to is finished (issue 34) belongs here: a message entering
// at `emitter` would carry a completion token that `forward` copies to every queued copy, that outputs inherit from
// the message they came from in `work`, and that `settle` and `failMessage` (the hand-off to the failure handler) count
// down; batching writers answer per message, so their outcomes settle each message's token in `work`.
export class MessageFlow {
  private inFlight = 0;
  private idle: (() => void) | undefined;

  constructor(private readonly parts: FlowParts) {}

  /** Messages taken in and not yet finished. */
  get pending(): number {
    return this.inFlight;
  }

  /** The `emit` a source is started with: its messages traced, forwarded downstream and counted. */
  emitter(node: SourceNode | InletNode): Emit {
    const name = node.instance.name;
    return async (message, withdrawal) => {
      const traced = this.parts.tracing.emit(name, message);
      const sent = traced?.message ?? message;
      try {
        await this.forward(node.downstream, sent, withdrawal);
      } catch (error) {
        endMessageSpan(traced?.span, String(error instanceof Error ? error.message : error), 0);
        throw error;
      }
      endMessageSpan(traced?.span, undefined, 0);
      node.counters.messagesOut++;
      this.parts.onOutput?.(name, sent);
    };
  }

  /** Starts the workers of a processor, `concurrency` of them. */
  startWorkers(node: ProcessorNode): void {
    for (let worker = 0; worker < node.settings.concurrency; worker++) node.workers.push(this.work(node));
  }

  /** Resolves once no message is in flight (true), or at the deadline (false). */
  async drained(timeoutMs: number): Promise<boolean> {
    if (this.inFlight === 0) return true;
    const idle = new Promise<true>((resolve) => {
      this.idle = () => resolve(true);
    });
    const deadline = sleep(timeoutMs, false, { ref: false });
    return Promise.race([idle, deadline]);
  }

  /** Puts a message on every downstream queue, waiting while one is full; copies it for each extra branch. */
  private async forward(targets: readonly ProcessorNode[], message: LoomMessage, withdrawal?: SignalSource): Promise<void> {
    // the withdrawal's signal and the combined one cost microseconds per message: read and made only when a queue is full
    // and the put must wait
    let abort: AbortSignal | undefined;
    for (const [index, target] of targets.entries()) {
      const copy = index === 0 ? message : structuredClone(message);
      this.inFlight++;
      if (target.queue.tryPut(copy)) continue;
      abort ??= withdrawal === undefined ? this.parts.signal : AbortSignal.any([withdrawal.signal, this.parts.signal]);
      try {
        await target.queue.put(copy, abort);
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
  private async work(node: ProcessorNode): Promise<void> {
    const { processor, queue } = node;
    for (;;) {
      const taken = await queue.take(processor.batching?.size ?? this.parts.maxBatch, processor.batching?.gatherMs ?? 0);
      if (taken.length === 0) return;
      node.counters.messagesIn += taken.length;
      const traced = this.parts.tracing.process(node.instance.name, taken);
      const batch = traced?.batch ?? taken;
      try {
        const { outcomes, retries } = await this.processWithRetries(node, batch);
        for (const [index, result] of outcomes.entries()) {
          const message = batch[index];
          const span = traced?.spans[index];
          if (message === undefined) continue;
          if (result.ok) {
            node.counters.messagesOut += result.outputs.length;
            for (const made of result.outputs) {
              const output = outputOf(made, span);
              this.parts.onOutput?.(node.instance.name, output);
              await this.forward(node.downstream, output);
            }
          } else if (result.unreachable === true) {
            // what the component writes to stayed unreachable past max_retry: later messages would fare no better
            this.failMessages(node, [message], failureOf(node, result));
            const reason = `${result.error} (still unreachable after ${node.settings.maxRetry} retries)`;
            this.parts.fail(new ComponentError(node.instance.name, reason, true, { cause: result.cause }));
          } else {
            await this.failMessage(node, message, failureOf(node, result));
          }
          endMessageSpan(span, result.ok ? undefined : result.error, retries[index] ?? 0);
        }
      } catch (error) {
        if (error instanceof ComponentFailedError) {
          const failure = new ComponentError(node.instance.name, error.message, true, { cause: error });
          this.failMessages(node, batch, failure);
          this.parts.fail(failure);
        } else {
          // only a closed queue (the run is stopping past its deadline) gets here
          this.parts.logger.warn({ workflow: this.parts.workflowName, component: node.instance.name, error: String(error) }, 'messages abandoned at stop');
        }
      } finally {
        this.settle(batch.length);
      }
    }
  }

  /** Runs a batch, retrying transient failures `max_retry` times `delay` ms apart; answers the outcomes and the retries of each message. */
  private async processWithRetries(node: ProcessorNode, batch: readonly LoomMessage[]): Promise<{ outcomes: Outcome[]; retries: number[] }> {
    const { maxRetry, delayMs } = node.settings;
    const outcomes = await this.processOnce(node, batch);
    const retries: number[] = [];
    for (let attempt = 1; attempt <= maxRetry; attempt++) {
      const retry = outcomes.flatMap((result, index) => (!result.ok && result.transient ? [index] : []));
      if (retry.length === 0) break;
      node.counters.messagesRetried += retry.length;
      for (const index of retry) retries[index] = attempt;
      if (delayMs > 0) await sleep(delayMs, undefined, { signal: this.parts.signal }).catch(() => undefined);
      const again = await this.processOnce(
        node,
        retry.flatMap((index) => batch[index] ?? []),
      );
      retry.forEach((index, position) => {
        const result = again[position];
        if (result !== undefined) outcomes[index] = result;
      });
    }
    return { outcomes, retries };
  }

  private async processOnce(node: ProcessorNode, batch: readonly LoomMessage[]): Promise<Outcome[]> {
    try {
      const outcomes = await node.processor.process(batch, this.parts.signal);
      if (outcomes.length !== batch.length) {
        return batch.map(() => ({ ok: false, error: `component answered ${outcomes.length} outcomes for ${batch.length} messages`, transient: false }));
      }
      return [...outcomes];
    } catch (error) {
      // the component itself is gone: no retry helps, the run fails
      if (error instanceof ComponentFailedError) throw error;
      const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return batch.map(() => ({ ok: false, error: text, transient: true, cause: error }));
    }
  }

  /** Messages the run cannot finish because their component died: counted as failed, reported and logged, not sent on. */
  private failMessages(node: RunNode, messages: readonly LoomMessage[], failure: ComponentError): void {
    this.record(node, messages, failure);
    this.parts.logger.warn(
      { workflow: this.parts.workflowName, component: node.instance.name, messageIds: messages.map((message) => message.id), error: failure.message },
      'messages failed with their component',
    );
  }

  /** A message failed for good: to the failure handler, or counted, logged and reported. */
  private async failMessage(node: ProcessorNode, message: LoomMessage, failure: ComponentError): Promise<void> {
    this.record(node, [message], failure);
    if (node.failureHandler === undefined) {
      this.parts.logger.warn(
        { workflow: this.parts.workflowName, component: node.instance.name, messageId: message.id, error: failure.message, kind: failure.kind },
        'message failed (no failure handler)',
      );
      return;
    }
    const body: Record<string, unknown> = { failedComponent: node.instance.name, messageId: message.id };
    if (node.settings.storeError) {
      body.error = failure.message;
      body.failure = failure.record();
    }
    if (node.settings.storeMessage) body.message = { id: message.id, body: message.body, headers: message.headers };
    await this.forward([node.failureHandler], { id: randomUUID(), body, headers: { ...message.headers } });
  }

  /** Counts, reports (onFailure: a script component's is audited) and tells the watchers of failed messages. */
  private record(node: RunNode, messages: readonly LoomMessage[], failure: ComponentError): void {
    node.counters.messagesFailed += messages.length;
    node.counters.lastError = failure.message;
    for (const message of messages) this.parts.onFailure?.(failure, message);
    this.parts.report(failure);
  }
}

/** The typed error of a failed outcome of this component. */
function failureOf(node: RunNode, result: Failed): ComponentError {
  return new ComponentError(node.instance.name, result.error, result.transient, { cause: result.cause });
}
