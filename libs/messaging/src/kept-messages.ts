import {
  DeliverPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  headers as natsHeaders,
  nanos,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from 'nats';
import { ENVELOPE_HEADER, envelopeCount } from './envelope.js';
import { NothingKeptError, ReplayOutOfRangeError } from './errors.js';
import { publishToJetStream } from './jetstream-publish.js';
import { keptStreamName, keptSubjects, sourceSubjectOfKept, streamName } from './names.js';
import { JetStreamCode, jetStreamCode } from './nats-errors.js';
import { type StreamSettings } from './settings.js';

/**
 * Processed messages kept for replay (issue 50). A workflow's stream stays a work queue: an acknowledged message leaves
 * it, so several executors share the work and an acknowledgement means what it meant. With
 * loom.messaging.stream.keepProcessedMs above 0, each acknowledged delivery is also copied (a core publish, no answer
 * awaited) into the workflow's kept stream, `LOOM-KEPT_<workflow>`: limits retention, its age limit the setting, the
 * oldest dropped first when it reaches loom.messaging.stream.maxBytes. A replay reads that stream in order and publishes
 * each kept message into the source's subject of the workflow's stream again, where the run takes it as any other.
 */

/** Where a replay starts: the messages processed within the last `sinceMs`, or those from a kept sequence on. */
export type ReplayStart = { readonly sinceMs: number } | { readonly fromSequence: number };

/** What a replay did. */
export interface ReplayResult {
  /** Messages published into the workflow's stream again. */
  readonly replayed: number;
  /** The kept stream's sequences of the first and the last message replayed; 0 when none was. */
  readonly firstSequence: number;
  readonly lastSequence: number;
  /** Kept messages of a source the workflow's stream no longer has. */
  readonly skipped: number;
  /** Kept messages JetStream took as duplicates: a replay within the duplicate window sent them already. */
  readonly duplicates: number;
}

/** The header a replayed message carries: the kept stream's sequence it came from. A replayed message is not kept again (its original stays kept). */
export const REPLAYED_FROM_HEADER = 'Loom-Replayed-From';

const FETCH_BATCH = 256;
const FETCH_EXPIRES_MS = 2_000;
const REPLAY_SUFFIX = /:replay:\d+$/;

/** The kept stream's configuration: limits retention, `keepProcessedMs` its age limit, the oldest dropped when full. */
export function keptStreamConfig(workflow: string, keepProcessedMs: number, settings: StreamSettings): StreamConfig {
  return {
    name: keptStreamName(workflow),
    subjects: [keptSubjects(workflow)],
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    storage: StorageType.File,
    num_replicas: settings.replicas,
    max_age: nanos(keepProcessedMs),
    max_bytes: settings.maxBytes,
    max_msgs: -1,
    // a message processed twice (delivered again after a crash) is kept once; JetStream refuses a window past max_age
    duplicate_window: nanos(Math.min(settings.duplicateWindowMs, keepProcessedMs)),
  } as StreamConfig;
}

/** Creates the kept stream or updates it to the current settings. */
export async function ensureKeptStream(manager: JetStreamManager, workflow: string, keepProcessedMs: number, settings: StreamSettings): Promise<void> {
  const config = keptStreamConfig(workflow, keepProcessedMs, settings);
  await manager.streams.add(config).catch(async (error: unknown) => {
    // it exists (another executor, or an earlier start, made it): take the current settings
    if (jetStreamCode(error) !== JetStreamCode.streamNameInUse) throw error;
    await manager.streams.update(config.name, config);
  });
}

/** The message id a kept message is replayed with: its first id and the kept sequence, so a replay retried within the duplicate window stores it once. */
export function replayMessageId(message: JsMsg): string {
  const original = message.headers?.get('Nats-Msg-Id') ?? '';
  const base = original === '' ? `seq-${message.seq}` : original.replace(REPLAY_SUFFIX, '');
  return `${base}:replay:${message.seq}`;
}

/**
 * Publishes the workflow's kept messages from `start` up to the last one kept when called into the sources' subjects of
 * its stream. A start before the oldest kept message, or after the last, is a ReplayOutOfRangeError; a workflow with
 * no kept stream a NothingKeptError. Nothing is published then.
 */
export async function replayKept(
  manager: JetStreamManager,
  client: JetStreamClient,
  workflow: string,
  start: ReplayStart,
  now: number = Date.now(),
): Promise<ReplayResult> {
  const kept = keptStreamName(workflow);
  const keptInfo = await manager.streams.info(kept).catch((error: unknown) => {
    if (jetStreamCode(error) !== JetStreamCode.streamNotFound) throw error;
    throw new NothingKeptError(workflow, `it has no kept stream (${kept}): no run of it kept any since loom.messaging.stream.keepProcessedMs was set`);
  });
  const sourceSubjects = new Set((await manager.streams.info(streamName(workflow))).config.subjects);
  const { first_seq: firstKept, last_seq: lastKept, messages } = keptInfo.state;
  if ('fromSequence' in start) {
    if (messages === 0 || start.fromSequence > lastKept) {
      throw new ReplayOutOfRangeError(workflow, `kept sequence ${start.fromSequence} is past the last kept (${messages === 0 ? 'none is kept' : lastKept})`);
    }
    if (start.fromSequence < firstKept) {
      throw new ReplayOutOfRangeError(workflow, `kept sequence ${start.fromSequence} is no longer kept: the oldest kept is ${firstKept}`);
    }
    const consumer = await client.consumers.get(kept, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start.fromSequence });
    return publishUpTo(consumer, client, sourceSubjects, lastKept);
  }
  const since = now - start.sinceMs;
  if (messages === 0 || Date.parse(keptInfo.state.last_ts) < since) return { replayed: 0, firstSequence: 0, lastSequence: 0, skipped: 0, duplicates: 0 };
  const consumer = await client.consumers.get(kept, { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(since).toISOString() });
  return publishUpTo(consumer, client, sourceSubjects, lastKept);
}

type KeptConsumer = Awaited<ReturnType<JetStreamClient['consumers']['get']>>;

/** Reads the kept messages in order until `last` and publishes each into its source's subject, a fetch's worth at once. */
async function publishUpTo(consumer: KeptConsumer, client: JetStreamClient, sourceSubjects: ReadonlySet<string>, last: number): Promise<ReplayResult> {
  let replayed = 0;
  let skipped = 0;
  let duplicates = 0;
  let firstSequence = 0;
  let lastSequence = 0;
  try {
    for (let done = false; !done;) {
      const batch: JsMsg[] = [];
      for await (const message of await consumer.fetch({ max_messages: FETCH_BATCH, expires: FETCH_EXPIRES_MS })) {
        if (message.seq > last) break;
        batch.push(message);
        if (message.seq === last) break;
      }
      // an empty fetch: the rest aged out meanwhile
      done = batch.length === 0 || batch[batch.length - 1]!.seq >= last;
      const sends = batch.map((message) => {
        const subject = sourceSubjectOfKept(message.subject);
        // a kept batch envelope (envelope.ts) is replayed as it is, and counts its messages
        const messages = (message.headers?.get(ENVELOPE_HEADER) ?? '') === '' ? 1 : envelopeCount(message.data);
        if (!sourceSubjects.has(subject)) {
          skipped += messages;
          return Promise.resolve();
        }
        return publishToJetStream(client, subject, message.data, replayHeaders(message), replayMessageId(message)).then((ack) => {
          if (ack.duplicate) duplicates += messages;
          else replayed += messages;
          firstSequence = firstSequence === 0 ? message.seq : Math.min(firstSequence, message.seq);
          lastSequence = Math.max(lastSequence, message.seq);
        });
      });
      await Promise.all(sends);
    }
  } finally {
    await consumer.delete().catch(() => undefined);
  }
  return { replayed, firstSequence, lastSequence, skipped, duplicates };
}

/** The kept message's own headers (its trace context among them), without JetStream's, and where it came from. */
function replayHeaders(message: JsMsg): ReturnType<typeof natsHeaders> {
  const replay = natsHeaders();
  for (const name of message.headers?.keys() ?? []) {
    if (!name.toLowerCase().startsWith('nats-')) replay.set(name, message.headers!.get(name));
  }
  replay.set(REPLAYED_FROM_HEADER, String(message.seq));
  return replay;
}
