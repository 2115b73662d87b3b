import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Logger } from '@loom/telemetry';
import { ComponentFailedError, type LoomMessage, type Outcome, type SignalSource } from './component.js';
import { ComponentError, withoutStack } from './component-error.js';
import { type CompletionTicket, type Queued } from './completion.js';
import { type RunInput } from './intake.js';
import { type FailedDelivery, type KeepOutcome, type RunOptions } from './options.js';
import { type InletNode, type ProcessorNode, type RunNode, type SourceNode } from './run-graph.js';
import { inheritOrigin, type RunTrail, setOrigin } from './message-trail.js';
import { type BatchSpans, endMessageSpan, outputOf, type RunTracing } from './tracing.js';

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
  /** Records what happens to each message for `loom message trace` (issue 50); absent: nothing recorded. */
  readonly trail?: RunTrail | undefined;
  /** Keeps a message that failed for good in the failure store (issue 50); absent: nothing is kept. */
  readonly keepFailed: RunOptions['keepFailed'];
  /** Tells the run's watchers of a component's error. */
  readonly report: (error: ComponentError) => void;
  /** A component died outside a single message: the run fails with it. */
  readonly fail: (error: ComponentError) => void;
}

/** Most failed messages on their way to the failure store at once; past it a worker waits for one to be kept. */
const MAX_KEEPING = 1024;

/** A failed outcome. */
type Failed = Extract<Outcome, { ok: false }>;

/** A batch's messages that failed for good on their way to the failure store, with their completion tickets. */
interface Keeping {
  readonly failed: FailedDelivery[];
  readonly tickets: (CompletionTicket | undefined)[];
}

/**
 * The path of messages through a run: from a source into the bounded queues, through each processor's workers with
 * retries, downstream or to the failure handler. It counts the messages in flight (`forward` adds one per queued copy,
 * `settle` takes them off once their component is done with them), so a stop can drain. Nothing is dropped silently: a
 * message goes downstream, is filtered out by its component, goes to the failure handler, or is counted as failed,
 * logged and reported.
 *
 * Messages come in through the run's intake (intake.ts): straight from a source (`emit`), or stored first
 * (`emitStored`) and delivered back (`enter`) with a completion ticket (completion.ts): `forward` holds it for every
 * queued copy, outputs and the failure handler's message inherit it in `work`, and each copy releases it once its
 * component is done with it; a batching writer's outcomes arrive per message, so each is released when its batch
 * outcome arrives.
 */
export class MessageFlow implements RunInput {
  private inFlight = 0;
  /** Failed messages on their way to the failure store (keepFailed); past MAX_KEEPING a worker waits in roomToKeep. */
  private keeping = 0;
  private readonly roomToKeep: (() => void)[] = [];
  private idle: (() => void) | undefined;

  constructor(private readonly parts: FlowParts) {}

  /** Messages taken in and not yet finished. */
  get pending(): number {
    return this.inFlight;
  }

  /** A source's message straight into the run: traced, forwarded downstream (waiting while a queue is full), counted. */
  async emit(node: SourceNode | InletNode, message: LoomMessage, withdrawal?: SignalSource): Promise<void> {
    const name = node.instance.name;
    const traced = this.parts.tracing.emit(name, message);
    const sent = traced?.message ?? message;
    setOrigin(sent, { messageId: sent.id, source: name });
    try {
      const waiting = this.forward(node.downstream, sent, withdrawal, undefined);
      if (waiting !== undefined) await waiting;
    } catch (error) {
      endMessageSpan(traced?.span, String(error instanceof Error ? error.message : error), 0);
      throw error;
    }
    endMessageSpan(traced?.span, undefined, 0);
    node.counters.messagesOut++;
    this.parts.onOutput?.(name, sent);
    this.parts.trail?.accepted(name, sent);
  }

  /**
   * A source's message kept outside the run first: traced, handed to `store`; resolves once it is kept, true when it
   * was a duplicate (not kept again, not counted).
   */
  async emitStored(node: SourceNode | InletNode, message: LoomMessage, store: (sent: LoomMessage) => Promise<boolean>): Promise<boolean> {
    const name = node.instance.name;
    const traced = this.parts.tracing.emit(name, message);
    const sent = traced?.message ?? message;
    let duplicate: boolean;
    try {
      duplicate = await store(sent);
    } catch (error) {
      endMessageSpan(traced?.span, String(error instanceof Error ? error.message : error), 0);
      throw error;
    }
    endMessageSpan(traced?.span, undefined, 0);
    if (!duplicate) {
      node.counters.messagesOut++;
      this.parts.onOutput?.(name, sent);
    }
    return duplicate;
  }

  /** A source's stored message delivered back into the run with its completion ticket, forwarded downstream (waiting while a queue is full). */
  async enter(node: SourceNode | InletNode, message: LoomMessage, ticket: CompletionTicket): Promise<void> {
    setOrigin(message, { messageId: message.id, source: node.instance.name });
    try {
      await this.forward(node.downstream, message, undefined, ticket);
    } catch {
      // the run is closing: the ticket was abandoned, JetStream delivers the message again
      return;
    }
    this.parts.trail?.accepted(node.instance.name, message);
    ticket.release();
  }

  /**
   * A failed message sent again from the failure store, into the queue of the component that failed it (waiting while
   * full), holding `ticket` as a stored delivery does: it is settled once all the message led to is finished.
   */
  async reenter(node: ProcessorNode, message: LoomMessage, ticket: CompletionTicket): Promise<void> {
    this.parts.trail?.retried(node.instance.name, message);
    try {
      await this.forward([node], message, undefined, ticket);
    } catch {
      // the run is closing: the ticket was abandoned, the record stays in the store
      return;
    }
    ticket.release();
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

  /**
   * Puts a message on every downstream queue, waiting while one is full; copies it for each extra branch, each copy
   * holding the ticket. A put that fails (the run is closing) abandons the ticket. Answers undefined when every copy
   * was queued at once, so a batch's outputs all reach the next queue before its reader wakes (and it takes them as
   * one batch instead of the first alone); a promise only when a queue was full.
   */
  private forward(
    targets: readonly ProcessorNode[],
    message: LoomMessage,
    withdrawal: SignalSource | undefined,
    ticket: CompletionTicket | undefined,
    from = 0,
  ): Promise<void> | undefined {
    for (let index = from; index < targets.length; index++) {
      const copy: Queued = { message: index === 0 ? message : copyOf(message), ticket };
      this.inFlight++;
      ticket?.hold();
      if (!(targets[index] as ProcessorNode).queue.tryPut(copy)) return this.putWaiting(targets, index, copy, message, withdrawal, ticket);
    }
    return undefined;
  }

  /** `forward` from a copy a full queue did not take: waits for room, then goes on with the other targets. */
  private async putWaiting(
    targets: readonly ProcessorNode[],
    index: number,
    copy: Queued,
    message: LoomMessage,
    withdrawal: SignalSource | undefined,
    ticket: CompletionTicket | undefined,
  ): Promise<void> {
    // the withdrawal's signal and the combined one cost microseconds per message: made only when a put must wait
    const abort = withdrawal === undefined ? this.parts.signal : AbortSignal.any([withdrawal.signal, this.parts.signal]);
    try {
      await (targets[index] as ProcessorNode).queue.put(copy, abort);
    } catch (error) {
      this.settle(1);
      ticket?.abandon();
      throw error;
    }
    await this.forward(targets, message, withdrawal, ticket, index + 1);
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
      const messages = taken.map((queued) => queued.message);
      const traced = this.parts.tracing.process(node.instance.name, messages);
      const batch = traced?.batch ?? messages;
      if (traced !== undefined) traced.batch.forEach((message, index) => inheritOrigin(message, messages[index] as LoomMessage));
      try {
        await this.processBatch(node, batch, taken, traced?.spans);
      } catch (error) {
        // the run cannot finish these: those delivered from a store are delivered again
        for (const queued of taken) queued.ticket?.abandon();
        if (error instanceof ComponentFailedError) {
          const failure = new ComponentError(node.instance.name, error.message, true, { cause: error });
          for (const message of batch) this.parts.trail?.failed(node.instance.name, message, 1, failure, undefined);
          this.failMessages(node, batch, failure);
          this.parts.fail(failure);
        } else {
          // only a closed queue (the run is stopping past its deadline) gets here
          this.parts.logger.warn({ workflow: this.parts.workflowName, component: node.instance.name, error: String(error) }, 'messages abandoned at stop');
        }
      } finally {
        this.settle(batch.length);
        // each copy is done with: its outputs and failure-handler message hold the ticket by now (abandoned ones ignore it)
        for (const queued of taken) queued.ticket?.release();
      }
    }
  }

  /** Processes one batch with retries, then sends each message's outputs downstream, or its failure on. */
  private async processBatch(
    node: ProcessorNode,
    batch: readonly LoomMessage[],
    taken: readonly Queued[],
    spans: BatchSpans['spans'] | undefined,
  ): Promise<void> {
    const { outcomes, retries } = await this.processWithRetries(node, batch);
    // failures of a batch cut short by the run's end say nothing of the messages: JetStream delivers them again
    if (this.parts.signal.aborted) for (const queued of taken) queued.ticket?.abandon();
    // the batch's messages that failed for good, for the failure store: kept together, in one call, after the loop
    let toKeep: Keeping | undefined;
    for (const [index, result] of outcomes.entries()) {
      const message = batch[index];
      const ticket = taken[index]?.ticket;
      const span = spans?.[index];
      if (message === undefined) continue;
      if (result.ok) {
        node.counters.messagesOut += result.outputs.length;
        this.parts.trail?.processed(node.instance.name, message, result.outputs);
        for (const made of result.outputs) {
          const output = outputOf(made, span);
          inheritOrigin(output, message);
          this.parts.onOutput?.(node.instance.name, output);
          // queued at once unless a queue is full: the batch's outputs reach the next component together
          const waiting = this.forward(node.downstream, output, undefined, ticket);
          if (waiting !== undefined) await waiting;
        }
      } else if (result.unreachable === true) {
        // what the component writes to stayed unreachable past max_retry: later messages would fare no better
        ticket?.abandon();
        const failure = failureOf(node, result);
        this.parts.trail?.failed(node.instance.name, message, (retries[index] ?? 0) + 1, failure, undefined);
        this.failMessages(node, [message], failure);
        const reason = `${result.error} (still unreachable after ${node.settings.maxRetry} retries)`;
        this.parts.fail(new ComponentError(node.instance.name, reason, true, { cause: result.cause }));
      } else {
        const failure = failureOf(node, result);
        const tries = (retries[index] ?? 0) + 1;
        this.parts.trail?.failed(node.instance.name, message, tries, failure, node.failureHandler?.instance.name);
        if (node.failureHandler === undefined && this.parts.keepFailed !== undefined) {
          this.record(node, [message], failure);
          // the delivery and the drain wait for the store: the ticket is held and the message counted in flight until then
          ticket?.hold();
          this.inFlight++;
          toKeep ??= { failed: [], tickets: [] };
          toKeep.failed.push({ component: node.instance.name, message, failure, tries, keepContent: node.settings.storeError });
          toKeep.tickets.push(ticket);
        } else {
          await this.failMessage(node, message, failure, ticket);
        }
      }
      endMessageSpan(span, result.ok ? undefined : result.error, retries[index] ?? 0);
    }
    if (toKeep !== undefined) await this.keep(node, toKeep, this.parts.keepFailed as NonNullable<FlowParts['keepFailed']>);
  }

  /**
   * Keeps a batch's failed messages in the failure store, in the background, so the worker goes on while the store
   * writes (the batches waiting then share a write and an fsync); each delivery is settled once the store answered.
   * Bounded: past MAX_KEEPING failures on their way to the store, the worker waits until they are kept.
   */
  private async keep(node: ProcessorNode, { failed, tickets }: Keeping, keepFailed: NonNullable<FlowParts['keepFailed']>): Promise<void> {
    this.keeping += failed.length;
    void keepFailed(failed)
      .then((outcomes) => {
        failed.forEach(({ message, failure }, index) => this.failedForGood(node, message, failure, tickets[index], outcomes[index] ?? 'unavailable'));
      })
      .finally(() => {
        this.keeping -= failed.length;
        for (const wake of this.roomToKeep.splice(0)) wake();
        for (const ticket of tickets) ticket?.release();
        this.settle(failed.length);
      });
    while (this.keeping > MAX_KEEPING) await new Promise<void>((resolve) => this.roomToKeep.push(resolve));
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
      for (const index of retry) {
        retries[index] = attempt;
        const failed = outcomes[index];
        if (failed !== undefined && !failed.ok)
          this.parts.trail?.attemptFailed(node.instance.name, batch[index] as LoomMessage, attempt, failureOf(node, failed));
      }
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

  /**
   * A message failed for good, with no failure store to keep it (those the store keeps go through `keep`): to the
   * failure handler (which then holds its ticket), or counted, logged and reported, its delivery to be terminated.
   */
  private async failMessage(node: ProcessorNode, message: LoomMessage, failure: ComponentError, ticket: CompletionTicket | undefined): Promise<void> {
    this.record(node, [message], failure);
    if (node.failureHandler === undefined) {
      this.failedForGood(node, message, failure, ticket, undefined);
      return;
    }
    const body: Record<string, unknown> = { failedComponent: node.instance.name, messageId: message.id };
    if (node.settings.storeError) {
      body.error = failure.message;
      body.failure = failure.record();
    }
    if (node.settings.storeMessage) body.message = { id: message.id, body: message.body, headers: message.headers };
    const handled: LoomMessage = { id: randomUUID(), body, headers: { ...message.headers } };
    inheritOrigin(handled, message);
    await this.forward([node.failureHandler], handled, undefined, ticket);
  }

  /**
   * A message failed for good with no failure handler, once the failure store answered (`kept` undefined: no store):
   * its delivery to be terminated and the failure logged, or, when the store could not be written, the delivery
   * abandoned (delivered again when it came from JetStream).
   */
  private failedForGood(
    node: ProcessorNode,
    message: LoomMessage,
    failure: ComponentError,
    ticket: CompletionTicket | undefined,
    kept: KeepOutcome | undefined,
  ): void {
    if (kept === 'unavailable' && ticket !== undefined) {
      ticket.abandon();
      return;
    }
    ticket?.fail(`component '${node.instance.name}' failed past max_retry: ${failure.message}`);
    this.parts.logger.warn(
      {
        workflow: this.parts.workflowName,
        component: node.instance.name,
        messageId: message.id,
        error: failure.message,
        kind: failure.kind,
        failureStore: kept ?? 'none',
      },
      'message failed (no failure handler)',
    );
  }

  /** Counts, reports (onFailure: a script component's is audited) and tells the watchers of failed messages. */
  private record(node: RunNode, messages: readonly LoomMessage[], failure: ComponentError): void {
    node.counters.messagesFailed += messages.length;
    node.counters.lastError = failure.message;
    for (const message of messages) this.parts.onFailure?.(failure, message);
    this.parts.report(failure);
  }
}

/** A copy of a message for another branch, with the same origin. */
function copyOf(message: LoomMessage): LoomMessage {
  const copy = structuredClone(message);
  inheritOrigin(copy, message);
  return copy;
}

/** The typed error of a failed outcome of this component (one message's failure: no stack, see withoutStack). */
function failureOf(node: RunNode, result: Failed): ComponentError {
  return withoutStack(() => new ComponentError(node.instance.name, result.error, result.transient, { cause: result.cause }));
}
