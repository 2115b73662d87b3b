import { ROOT_CONTEXT } from '@opentelemetry/api';
import { type Delivery, type Messaging, type SourceConsumer } from '@loom/messaging';
import { type Emit, type LoomMessage, type SignalSource } from './component.js';
import { ComponentError } from './component-error.js';
import { Completions } from './completion.js';
import { type Intake, type IntakeFactory, type IntakeParts, type PublishOutcome } from './intake.js';
import { type InletNode, type SourceNode } from './run-graph.js';

/** Headers JetStream adds or reads itself (`Nats-Msg-Id`, …): they stay out of a message's own headers. */
const NATS_HEADER_PREFIX = 'nats-';

/**
 * Messages a consumer fetches ahead of the run (never more than loom.messaging.consumer.maxAckPending): a run takes
 * deliveries faster in larger pulls, and they wait in the client no longer than in a processor's queue.
 */
const CONSUMER_BATCH = 256;

/** A third of the default ack wait (loom.messaging.consumer.ackWaitMs, 30 s). */
const DEFAULT_PROGRESS_EVERY_MS = 10_000;

/** How often a run with this ack wait tells JetStream its unfinished deliveries are still being worked on. */
export function progressInterval(ackWaitMs: number): number {
  return Math.max(50, Math.floor(ackWaitMs / 3));
}

/** What JetStream is told of a terminated message. */
const TERM_REASON = 'loom: failed past max_retry with no failure handler, or not a message';

/**
 * A run's messages kept in JetStream (issue 34): every source's messages are stored in the workflow's stream (a subject
 * per source component) before they are answered, and come back into the run through the source's durable consumer,
 * which every executor running the workflow shares. A delivery enters with a completion ticket (completion.ts) and is
 * acknowledged once all it led to is finished, terminated when a branch failed past its retries with no failure handler,
 * and nak'd when the run closes first; meanwhile JetStream hears every `progressEveryMs` that it is still being worked on.
 * A message's id is its JetStream message id (a publish retried with it within the duplicate window is stored once),
 * its body the stored payload (JSON), its headers (the W3C `traceparent` among them) NATS headers. A paused run still
 * stores what is published (its stream holds it until the resume); only its consumers stop.
 */
export class JetStreamIntake implements Intake {
  /** JetStream takes one connection's publishes in the order sent. */
  readonly concurrentPublishes = true;
  private readonly completions = new Completions();
  /** Each source's consumer and the loop that takes its deliveries into the run. */
  private readonly consumers: { readonly consumer: SourceConsumer; readonly taking: Promise<void> }[] = [];
  private progress: NodeJS.Timeout | undefined;

  constructor(
    private readonly messaging: Messaging,
    private readonly parts: IntakeParts,
    /**
     * How often the run tells JetStream its unfinished deliveries are still being worked on; well under
     * `loom.messaging.consumer.ackWaitMs` (default a third of its default), so a message waiting behind a slow
     * component is not delivered again.
     */
    private readonly progressEveryMs: number = DEFAULT_PROGRESS_EVERY_MS,
  ) {}

  emitter(node: SourceNode | InletNode): Emit {
    return async (message) => void (await this.store(node, message, false));
  }

  /** Answered once JetStream stored it; JetStream de-duplicates by the message id, whoever chose it. */
  async publish(node: InletNode, message: LoomMessage, _withdrawal: SignalSource, clientId: boolean): Promise<PublishOutcome> {
    // a paused run still stores what is published: its stream holds it until the run resumes
    this.parts.checkTaking(true);
    return (await this.store(node, message, !clientId)) ? 'duplicate' : 'accepted';
  }

  /** Makes sure of the workflow's stream (a subject and a durable consumer per source) and starts taking deliveries. */
  async start(): Promise<void> {
    await this.messaging.ensureWorkflowStream(
      this.parts.workflowName,
      this.parts.sources().map((node) => node.instance.name),
    );
    this.progress = setInterval(() => this.touchUnfinished(), this.progressEveryMs);
    this.progress.unref();
    await this.consume();
  }

  /** Stops the consumers: the messages they fetched and did not hand out go back to JetStream at once. */
  async pause(): Promise<void> {
    await this.stopConsumers(this.consumers.splice(0));
  }

  resume(): Promise<void> {
    return this.consume();
  }

  stopInput(): Promise<void> {
    return this.stopConsumers(this.consumers);
  }

  /** The deliveries entered and not finished are nak'd: JetStream delivers them again. */
  close(): void {
    clearInterval(this.progress);
    const abandoned = this.completions.abandonAll();
    if (abandoned > 0) {
      this.parts.logger.info(
        { workflow: this.parts.workflowName, runId: this.parts.runId, messages: abandoned },
        'unfinished stored messages left to be delivered again',
      );
    }
  }

  /** Tells JetStream the deliveries entered and not finished are still being worked on; answers how many. */
  protected touchUnfinished(): number {
    return this.completions.touchAll();
  }

  /**
   * Stores a source's message in the workflow's stream, traced; resolves once JetStream stored it, true when it was a
   * duplicate (a message with its id was stored within the duplicate window). A full stream is a StreamFullError.
   * `generatedId`: the executor made the id up for a publish without one, so it is not remembered for de-duplication.
   */
  private store(node: SourceNode | InletNode, message: LoomMessage, generatedId: boolean): Promise<boolean> {
    return this.parts.input.emitStored(node, message, (sent) =>
      // the message's own traceparent travels as it is, not the context of whoever calls this; the publishes of one
      // batch (made in one turn) are stored together as one JetStream message (Messaging.publish)
      this.messaging
        .publish(this.parts.workflowName, node.instance.name, JSON.stringify(sent.body), {
          messageId: sent.id,
          headers: sent.headers,
          context: ROOT_CONTEXT,
          generatedId,
        })
        .then(isDuplicate),
    );
  }

  /** Takes each source's stored messages into the run through a consumer of its durable consumer. */
  private async consume(): Promise<void> {
    for (const node of this.parts.sources()) {
      const consumer = await this.messaging.consume(this.parts.workflowName, node.instance.name, { batch: CONSUMER_BATCH });
      this.consumers.push({ consumer, taking: this.take(node, consumer) });
    }
  }

  private async stopConsumers(consumers: readonly { readonly consumer: SourceConsumer; readonly taking: Promise<void> }[]): Promise<void> {
    await Promise.allSettled(consumers.map(({ consumer }) => consumer.stop()));
    await Promise.allSettled(consumers.map(({ taking }) => taking));
  }

  /** Takes a source's deliveries into the run until its consumer is stopped; a consumer that ends or breaks otherwise fails the run. */
  private async take(node: SourceNode | InletNode, consumer: SourceConsumer): Promise<void> {
    let failure: { readonly error: unknown } | undefined;
    try {
      // a batch envelope's messages come together: one step of the iteration, then each entered in order
      for await (const deliveries of consumer.batches()) {
        for (const delivery of deliveries) {
          if (consumer.state !== 'consuming') {
            // stopped part way through a batch: the rest go back with their envelope
            delivery.nak();
            continue;
          }
          const entering = this.enter(node, delivery);
          if (entering !== undefined) await entering;
        }
      }
    } catch (error) {
      failure = { error };
    }
    if (consumer.state !== 'consuming') return;
    if (failure === undefined) {
      this.parts.fail(new ComponentError(node.instance.name, 'its stored messages are no longer delivered', true));
      return;
    }
    const { error } = failure;
    const reason = `its stored messages could not be consumed: ${error instanceof Error ? error.message : String(error)}`;
    this.parts.fail(new ComponentError(node.instance.name, reason, true, { cause: error }));
  }

  /**
   * A delivery enters the run with a completion ticket (resolves once it is queued); a payload that is no message is
   * terminated at once (undefined). Not async: it runs once per delivered message.
   */
  private enter(node: SourceNode | InletNode, delivery: Delivery): Promise<void> | undefined {
    const source = node.instance.name;
    const message = messageOf(delivery);
    if (typeof message === 'string') {
      this.terminate(delivery, source, `message ${delivery.sequence} of source '${source}': ${message}`);
      return undefined;
    }
    const ticket = this.completions.ticket(delivery, (reason) => this.terminate(delivery, source, reason));
    return this.parts.input.enter(node, message, ticket);
  }

  /** Terminates a delivery (counted by the messaging metrics), its reason logged here. */
  private terminate(delivery: Delivery, source: string, reason: string): void {
    // the reason goes to the log, which is redacted; JetStream (its advisories) gets no component's error text
    delivery.term(TERM_REASON);
    this.parts.logger.warn(
      { workflow: this.parts.workflowName, component: source, messageId: delivery.messageId, sequence: delivery.sequence, reason },
      'message terminated: a branch failed past max_retry with no failure handler; it will not be delivered again',
    );
  }
}

function isDuplicate(result: { readonly duplicate: boolean }): boolean {
  return result.duplicate;
}

/** Runs that keep their messages in JetStream through this connection (the executor's mode with loom.messaging.nats.servers). */
export function jetStreamIntake(messaging: Messaging, progressEveryMs?: number): IntakeFactory {
  return (parts) => new JetStreamIntake(messaging, parts, progressEveryMs);
}

/** The message a delivery carries, or why it carries none (a payload that is not a JSON object). */
export function messageOf(delivery: Delivery): LoomMessage | string {
  let body: unknown;
  try {
    body = JSON.parse(delivery.text());
  } catch {
    return 'its payload is not valid JSON';
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'its payload is not a JSON object';
  const headers: Record<string, string> = {};
  const given = delivery.headers;
  for (const name in given) {
    if (!name.toLowerCase().startsWith(NATS_HEADER_PREFIX)) headers[name] = given[name]!;
  }
  return { id: delivery.messageId ?? `${delivery.workflow}:${delivery.sequence}`, body: body as Record<string, unknown>, headers };
}
