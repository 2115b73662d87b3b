import { propagation, ROOT_CONTEXT } from '@opentelemetry/api';
import { connectNats, MessagingError, type NatsConnector } from '@loom/messaging';
import { ValidationError } from '@loom/domain';
import { type ComponentFactory, type LoomMessage, type Outcome, outcome, type Processor } from '../runtime/component.js';
import { type FilledTemplate, fillTemplate } from './message-template.js';
import { natsConnectionName, natsConnectionSettings } from './nats-settings.js';

/** A value a subject token may take from a body field: no whitespace, `.`, `*` or `>`. */
const SUBJECT_TOKEN = /^[^\s.*>]+$/;

/** Subjects whose stream (or none) was looked up, at most this many remembered. */
const STREAM_LOOKUPS_KEPT = 1024;

/**
 * A sink that publishes each message's body (JSON) to a subject: fixed, or a template whose `{field}` placeholders take
 * body fields (each a subject token). Message headers go along, and the message's trace context. With `jetstream`, or
 * when a JetStream stream takes the subject (looked up once per subject), it waits for JetStream's acknowledgement,
 * with the message id as `Nats-Msg-Id` (a retry is stored once): a full stream fails the message transiently
 * (retried as `max_retry` says), a refusal for good. A core publish is confirmed by a flush of the batch.
 */
export const natsPublisherFactory: ComponentFactory = {
  kind: 'processor',
  create: async (context) => {
    const settings = natsConnectionSettings(context);
    const subject = context.options.string('subject').trim();
    if (subject === '') throw ValidationError.of(`${context.name}.options.subject`, 'is required', 'MISSING_OPTION');
    const connector = await connectNats(settings, { name: natsConnectionName(context) });
    return new NatsPublisher(connector, subject, context.options.boolean('jetstream'));
  },
};

/** What one message became before the batch's flush: an outcome, or a core publish the flush confirms. */
type Published = Outcome | 'published';

class NatsPublisher implements Processor {
  private readonly streamOfSubject = new Map<string, Promise<boolean>>();

  constructor(
    private readonly connector: NatsConnector,
    private readonly subject: string,
    private readonly jetStream: boolean,
  ) {}

  async process(batch: readonly LoomMessage[]): Promise<readonly Outcome[]> {
    const subjects = batch.map((message) =>
      fillTemplate(this.subject, message.body, 'the subject template', (value) => (SUBJECT_TOKEN.test(value) ? value : undefined)),
    );
    // every lookup first, so the publishes below leave in the batch's order whatever their subjects
    const streams = new Map<string, Promise<boolean>>();
    for (const subject of subjects) if (subject.ok && !streams.has(subject.value)) streams.set(subject.value, this.toStream(subject.value));
    const known = new Map<string, boolean | Outcome>();
    for (const [subject, lookup] of streams) known.set(subject, await lookup.catch((error: unknown) => failed(error)));
    const published = await Promise.all(batch.map((message, index) => Promise.resolve(this.publish(message, subjects[index]!, known))));
    if (!published.includes('published')) return published as Outcome[];
    const flushed = await this.connector.flush().then(
      () => outcome.none(),
      (error: unknown) => failed(error),
    );
    return published.map((result) => (result === 'published' ? flushed : result));
  }

  close(): Promise<void> {
    return this.connector.close();
  }

  /** Sends one message (a JetStream publish is started synchronously, so the batch's order holds); its outcome, or 'published'. */
  private publish(message: LoomMessage, subject: FilledTemplate, known: ReadonlyMap<string, boolean | Outcome>): Promise<Published> | Published {
    if (!subject.ok) return outcome.fail(subject.error);
    const toStream = known.get(subject.value)!;
    if (typeof toStream !== 'boolean') return toStream;
    const payload = new TextEncoder().encode(JSON.stringify(message.body));
    // the message's trace context goes on in the NATS headers, so a consumer's spans join the message's trace
    const context = propagation.extract(ROOT_CONTEXT, message.headers);
    try {
      if (toStream) {
        return this.connector.publishToStream(subject.value, payload, { headers: message.headers, messageId: message.id, context }).then(
          () => outcome.none(),
          (error: unknown) => failed(error),
        );
      }
      this.connector.publish(subject.value, payload, { headers: message.headers, context });
      return 'published';
    } catch (error) {
      return failed(error);
    }
  }

  /** Whether a publish to the subject waits for JetStream: always with `jetstream`, else when a stream takes the subject. */
  private toStream(subject: string): Promise<boolean> {
    if (this.jetStream) return Promise.resolve(true);
    let found = this.streamOfSubject.get(subject);
    if (found === undefined) {
      if (this.streamOfSubject.size >= STREAM_LOOKUPS_KEPT) this.streamOfSubject.clear();
      found = this.connector.streamOfSubject(subject).then((stream) => stream !== undefined);
      // a lookup that failed is made again for the next message
      void found.catch(() => this.streamOfSubject.delete(subject));
      this.streamOfSubject.set(subject, found);
    }
    return found;
  }
}

/** A failed publish as an outcome: the typed messaging error's words and retryability, the error as its cause. */
function failed(error: unknown): Outcome {
  if (error instanceof MessagingError) return outcome.fail(error.message, error.retryable, error);
  return outcome.fail(error instanceof Error ? error.message : String(error), true, error);
}
