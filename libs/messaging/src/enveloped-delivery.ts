import { type Context } from '@opentelemetry/api';
import { type JsMsg } from 'nats';
import { type Delivery } from './delivery.js';
import { readEnvelope } from './envelope.js';
import { EnvelopeSettlement } from './envelope-settlement.js';
import { type MessagingMetrics } from './metrics.js';
import { type RecentIds } from './recent-ids.js';
import { extractRecordTraceContext } from './trace-context.js';

/** What the messages of one envelope share: its JetStream message, where it came from and its settlement. */
interface Envelope {
  readonly workflow: string;
  readonly source: string;
  readonly data: Buffer;
  readonly sequence: number;
  readonly deliveryCount: number;
  readonly lastDelivery: boolean;
  readonly settlement: EnvelopeSettlement;
  readonly recent: RecentIds | undefined;
  readonly metrics: MessagingMetrics;
}

/**
 * One message of a batch envelope as a Delivery (issue 51): its payload read from the envelope's bytes only when asked
 * (`text` decodes them in place), its settlement reported once to the envelope's (envelope-settlement.ts). A class
 * with its verbs on the prototype, not an object of closures: one is made per message on the durable path.
 */
export class EnvelopedDelivery implements Delivery {
  private settled = false;

  constructor(
    private readonly envelope: Envelope,
    readonly messageId: string,
    readonly headers: Readonly<Record<string, string>>,
    private readonly start: number,
    private readonly end: number,
  ) {}

  get workflow(): string {
    return this.envelope.workflow;
  }

  get source(): string {
    return this.envelope.source;
  }

  get sequence(): number {
    return this.envelope.sequence;
  }

  get deliveryCount(): number {
    return this.envelope.deliveryCount;
  }

  get lastDelivery(): boolean {
    return this.envelope.lastDelivery;
  }

  get payload(): Uint8Array {
    return this.envelope.data.subarray(this.start, this.end);
  }

  text(): string {
    return this.envelope.data.toString('utf8', this.start, this.end);
  }

  traceContext(base?: Context): Context {
    return extractRecordTraceContext(this.headers, base);
  }

  ack(): void {
    if (!this.settle(true)) return;
    this.envelope.settlement.processed();
  }

  ackConfirmed(): Promise<void> {
    if (!this.settle(true)) return Promise.resolve();
    return this.envelope.settlement.processedConfirmed();
  }

  nak(delayMs?: number): void {
    if (!this.settle(false)) return;
    this.envelope.settlement.handedBack(delayMs);
  }

  term(reason?: string): void {
    if (!this.settle(true)) return;
    this.envelope.metrics.terminated(this.envelope.workflow);
    this.envelope.settlement.terminated(reason);
  }

  working(): void {
    if (!this.settled) this.envelope.settlement.working();
  }

  /** False when it was settled before; `finished`: for good, so the envelope coming back does not hand it out again. */
  private settle(finished: boolean): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (finished) this.envelope.recent?.finished(this.messageId);
    return true;
  }
}

/** Where an envelope comes from, and what its messages are told. */
export interface EnvelopeSource {
  readonly workflow: string;
  readonly source: string;
  readonly maxDeliver: number;
  readonly metrics: MessagingMetrics;
  readonly recent?: RecentIds | undefined;
  readonly keep?: ((message: JsMsg) => void) | undefined;
}

/**
 * The deliveries of a batch envelope's JetStream message (envelope.ts, version 1), in order. `replayedFrom` (the kept
 * sequence of a replayed envelope) suffixes each id as a replayed single message's id is (kept-messages.ts). An id this
 * executor took from another stored message, or finished, within the duplicate window is settled at once and left out
 * (RecentIds). An EnvelopeFormatError when the bytes do not read as an envelope; nothing is settled then.
 */
export function envelopeDeliveries(message: JsMsg, from: EnvelopeSource, replayedFrom: string): EnvelopedDelivery[] {
  const raw = message.data;
  const data = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const read = readEnvelope(data);
  const deliveryCount = message.info.deliveryCount;
  const { workflow, source, metrics, recent } = from;
  const settlement = new EnvelopeSettlement(message, read.length, `message batch ${message.seq} of workflow '${workflow}'`, from.keep);
  const envelope: Envelope = {
    workflow,
    source,
    data,
    sequence: message.seq,
    deliveryCount,
    lastDelivery: deliveryCount >= from.maxDeliver,
    settlement,
    recent,
    metrics,
  };
  const deliveries: EnvelopedDelivery[] = [];
  if (read.length === 0) message.ack();
  for (const { id, headers, start, end } of read) {
    const messageId = replayedFrom === '' ? id : `${id}:replay:${replayedFrom}`;
    if (recent !== undefined && !recent.delivered(messageId, message.seq)) {
      // a copy of a message taken from another stored message (or finished): done with, without marking the id
      settlement.processed();
      continue;
    }
    const delivery = new EnvelopedDelivery(envelope, messageId, headers, start, end);
    if (deliveryCount > 1) metrics.redelivered(workflow);
    deliveries.push(delivery);
  }
  return deliveries;
}
