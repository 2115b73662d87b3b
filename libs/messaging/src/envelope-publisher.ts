import { headers as natsHeaders, type JetStreamClient, type PubAck } from 'nats';
import { ENVELOPE_HEADER, ENVELOPE_VERSION, encodePrepared, envelopeMessageId, type PreparedMessage, prepareEnvelopeMessage } from './envelope.js';
import { publishToJetStream } from './jetstream-publish.js';
import { type RecentIds } from './recent-ids.js';
import { natsHeadersOf } from './trace-context.js';

/** What JetStream answered for one message of a batch. */
export interface StoredAnswer {
  readonly sequence: number;
  readonly duplicate: boolean;
}

/** A publish waiting for its turn's envelope. */
interface Waiting {
  readonly id: string;
  readonly source: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: Uint8Array | string;
  /** Looked up among and added to the recent ids (false: an id loom made up, which cannot come again). */
  readonly remember: boolean;
  readonly resolve: (answer: StoredAnswer) => void;
  readonly reject: (error: unknown) => void;
  readonly answer: Promise<StoredAnswer>;
}

/** The publishes to one source's subject made in one turn of the event loop. */
interface Turn {
  readonly workflow: string;
  readonly subject: string;
  readonly waiting: Waiting[];
}

/** Room kept in an envelope's JetStream message for its headers (its id, the version) below the server's max_payload. */
const HEADER_ROOM = 4096;

/** What the publisher takes from its connection. */
export interface EnvelopePublisherParts {
  readonly client: JetStreamClient;
  /** The server's largest message (NATS max_payload), in bytes. */
  readonly maxPayload: () => number;
  /** The recent ids of a workflow's stream. */
  readonly recentIds: (workflow: string) => RecentIds;
  /** `count` messages of the workflow were stored (not duplicates). */
  readonly stored: (workflow: string, count: number) => void;
  /** The error a publish to a source of a workflow rejects with, from what the client threw. */
  readonly failure: (workflow: string, source: string, error: unknown) => unknown;
}

/**
 * Publishes with ids grouped into batch envelopes (envelope.ts, issue 51): the publishes to one source made in the same
 * turn of the event loop (a PublishMessages call, a PublishStream request: their messages are handed over in one loop)
 * go to JetStream as one message, or as few as the server's max_payload allows, in the order made. A batch of one is
 * stored as a single message under its own id, as before envelopes. Each publish resolves once JetStream stored its
 * message, or as a duplicate: an id this executor stored (or is storing) within the duplicate window (RecentIds), an id
 * repeated in the batch, or a batch JetStream already had under the same ids.
 */
export class EnvelopePublisher {
  private readonly turns = new Map<string, Turn>();

  constructor(private readonly parts: EnvelopePublisherParts) {}

  /** Publishes one message with an id to a source's subject; resolves with what JetStream answered, rejects with `failure`'s error. */
  publish(
    workflow: string,
    source: string,
    subject: string,
    id: string,
    headers: Readonly<Record<string, string>>,
    payload: Uint8Array | string,
    remember = true,
  ): Promise<StoredAnswer> {
    let turn = this.turns.get(subject);
    if (turn === undefined) {
      const started: Turn = { workflow, subject, waiting: [] };
      this.turns.set(subject, started);
      queueMicrotask(() => this.flush(started));
      turn = started;
    }
    let resolve!: (answer: StoredAnswer) => void;
    let reject!: (error: unknown) => void;
    const answer = new Promise<StoredAnswer>((resolved, rejected) => {
      resolve = resolved;
      reject = rejected;
    });
    turn.waiting.push({ id, source, headers, payload, remember, resolve, reject, answer });
    return answer;
  }

  /** Sends a turn's publishes: duplicates answered at once, the rest in envelopes sized to the server's max_payload. */
  private flush(turn: Turn): void {
    this.turns.delete(turn.subject);
    const recent = this.parts.recentIds(turn.workflow);
    const fresh: Waiting[] = [];
    for (const item of turn.waiting) {
      if (!item.remember) {
        fresh.push(item);
        continue;
      }
      const known = recent.get(item.id);
      if (known === undefined) {
        fresh.push(item);
        // the same id later in this turn (or in the next, before JetStream answers) waits for this one
        recent.publishing(item.id, item.answer);
        continue;
      }
      if (typeof known === 'number') item.resolve({ sequence: known, duplicate: true });
      // stored by a publish on its way: a duplicate once it is stored, published again if it is not
      else {
        known.then(
          (stored) => item.resolve({ sequence: stored.sequence, duplicate: true }),
          () => this.publish(turn.workflow, item.source, turn.subject, item.id, item.headers, item.payload, item.remember).then(item.resolve, item.reject),
        );
      }
    }
    for (const chunk of this.chunks(fresh)) void this.send(turn, recent, chunk);
  }

  /** The fresh publishes split into envelopes no larger than the server takes, in order. */
  private chunks(fresh: readonly Waiting[]): { readonly items: Waiting[]; readonly prepared: PreparedMessage[] }[] {
    // a single message goes as it is: nothing to size
    if (fresh.length <= 1) return fresh.length === 0 ? [] : [{ items: [...fresh], prepared: [] }];
    const limit = this.parts.maxPayload() - HEADER_ROOM;
    const chunks: { items: Waiting[]; prepared: PreparedMessage[] }[] = [];
    let current = { items: [] as Waiting[], prepared: [] as PreparedMessage[] };
    let size = 4;
    for (const item of fresh) {
      const prepared = prepareEnvelopeMessage(item);
      if (current.items.length > 0 && size + prepared.size > limit) {
        chunks.push(current);
        current = { items: [], prepared: [] };
        size = 4;
      }
      current.items.push(item);
      current.prepared.push(prepared);
      size += prepared.size;
    }
    if (current.items.length > 0) chunks.push(current);
    return chunks;
  }

  /** One envelope (or a single message) to JetStream; each of its publishes answered with JetStream's answer. */
  private async send(turn: Turn, recent: RecentIds, chunk: { readonly items: Waiting[]; readonly prepared: PreparedMessage[] }): Promise<void> {
    const { items, prepared } = chunk;
    let ack: PubAck;
    try {
      if (items.length === 1) {
        const [item] = items as [Waiting];
        const payload = typeof item.payload === 'string' ? Buffer.from(item.payload, 'utf8') : item.payload;
        ack = await publishToJetStream(this.parts.client, turn.subject, payload, natsHeadersOf(item.headers), item.id);
      } else {
        const headers = natsHeaders();
        headers.set(ENVELOPE_HEADER, ENVELOPE_VERSION);
        const ids = items.map((item) => item.id);
        ack = await publishToJetStream(this.parts.client, turn.subject, encodePrepared(prepared), headers, envelopeMessageId(ids));
      }
    } catch (error) {
      for (const item of items) {
        if (item.remember) recent.forget(item.id);
        item.reject(this.parts.failure(turn.workflow, item.source, error));
      }
      return;
    }
    if (!ack.duplicate) this.parts.stored(turn.workflow, items.length);
    // one answer for all of them: nobody changes it
    const answer: StoredAnswer = { sequence: ack.seq, duplicate: ack.duplicate };
    for (const item of items) {
      if (item.remember) recent.stored(item.id, ack.seq);
      item.resolve(answer);
    }
  }
}
