import { createInbox, headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from 'nats';
import { JetStreamRequestError, MessagingClosedError, MessagingUnavailableError } from './errors.js';
import { isFullAnswer, JetStreamCode } from './nats-errors.js';

/** What became of one create: stored; refused because the key holds a value (or a delete marker); refused because the bucket is full. */
export type CreateOutcome = 'created' | 'exists' | 'full';

/** A key and the value a create writes under it. */
export interface KeyEntry {
  /** A key-value key (letters, digits and `-_=/.`, not starting or ending with a dot): it becomes the subject's last tokens. */
  readonly key: string;
  readonly value: Uint8Array;
}

/** JetStream stores a message with this header only while its subject's last sequence is the one named (0: it has none). */
const EXPECTED_LAST_SUBJECT_SEQUENCE = 'Nats-Expected-Last-Subject-Sequence';
/** The status of an answer nobody gave: no stream takes the subject. */
const NO_RESPONDERS = 503;

/** JetStream's answer to a publish: where it stored it, or why not. */
interface PubAck {
  readonly error?: { readonly err_code?: number; readonly description?: string };
}

type Answer = (message: Msg) => void;

const decoder = new TextDecoder();

/**
 * Creates of key-value entries sent as plain publishes, each with a reply subject of its own under one subscription
 * made once, and all of a call's entries in the same turn (one socket write). The client's key-value create is a
 * request per entry: a timer, an Error made for its stack even when it succeeds, an async chain and a socket write
 * each, about half of what a message kept in JetStream's failure store cost (issue 50). JetStream stores a create only
 * while the key's subject holds no message, so a key kept (or deleted, whose marker is its last message) is answered
 * 'exists'; the caller reads and writes it the client's way then. The bucket must exist (Messaging.keyValue).
 */
export class KeyCreates {
  private readonly prefix = createInbox();
  private readonly waiting = new Map<string, Answer>();
  /** How each call still waiting ends when the connection closes. */
  private readonly open = new Set<() => void>();
  private subscription: Subscription | undefined;
  private next = 0;

  constructor(
    private readonly connection: NatsConnection,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Creates each entry in `bucket`; answers each one's outcome, in order, once JetStream answered them all. Rejects
   * with MessagingUnavailableError when an answer has not come within the time-out (nothing is known of those
   * entries: they may be stored), with JetStreamRequestError when JetStream refused one for another reason.
   */
  create(bucket: string, entries: readonly KeyEntry[]): Promise<CreateOutcome[]> {
    if (entries.length === 0) return Promise.resolve([]);
    const what = `write to the key-value bucket '${bucket}'`;
    this.subscription ??= this.connection.subscribe(`${this.prefix}.*`, { callback: (error, message) => this.answered(error, message) });
    const tokens: string[] = [];
    return new Promise<CreateOutcome[]>((resolve, reject) => {
      const outcomes: CreateOutcome[] = new Array<CreateOutcome>(entries.length);
      let unanswered = entries.length;
      const settle = (error: Error | undefined): void => {
        clearTimeout(timer);
        this.open.delete(closed);
        for (const token of tokens) this.waiting.delete(token);
        if (error === undefined) resolve(outcomes);
        else reject(error);
      };
      const closed = (): void => settle(new MessagingClosedError(what));
      this.open.add(closed);
      const timer = setTimeout(() => settle(new MessagingUnavailableError(what, `no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      const headers = natsHeaders();
      headers.set(EXPECTED_LAST_SUBJECT_SEQUENCE, '0');
      try {
        entries.forEach(({ key, value }, index) => {
          const token = String((this.next += 1));
          tokens.push(token);
          this.waiting.set(token, (message) => {
            const outcome = outcomeOf(what, bucket, message);
            if (outcome instanceof Error) return settle(outcome);
            outcomes[index] = outcome;
            if (--unanswered === 0) settle(undefined);
          });
          this.connection.publish(`$KV.${bucket}.${key}`, value, { reply: `${this.prefix}.${token}`, headers });
        });
      } catch (error) {
        // the connection is closed or draining: the client refuses the publish at once
        settle(new MessagingUnavailableError(what, error instanceof Error ? error.message : String(error), { cause: error }));
      }
    });
  }

  /** Stops the subscription; creates still waiting reject with MessagingClosedError (they may be stored). Idempotent. */
  close(): void {
    for (const end of [...this.open]) end();
    this.subscription?.unsubscribe();
  }

  private answered(error: Error | null, message: Msg): void {
    if (error !== null) return;
    const token = message.subject.slice(this.prefix.length + 1);
    this.waiting.get(token)?.(message);
  }
}

/** A create's outcome from JetStream's answer, or the error it is. */
function outcomeOf(what: string, bucket: string, message: Msg): CreateOutcome | Error {
  if (message.headers?.code === NO_RESPONDERS) return new JetStreamRequestError(what, undefined, `no JetStream stream takes the keys of bucket '${bucket}'`);
  const { error } = JSON.parse(decoder.decode(message.data)) as PubAck;
  if (error === undefined) return 'created';
  const description = error.description ?? '';
  if (error.err_code === JetStreamCode.wrongLastSequence) return 'exists';
  if (isFullAnswer(error.err_code, description)) return 'full';
  return new JetStreamRequestError(what, error.err_code, description);
}
