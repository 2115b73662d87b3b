// The raw baseline of durable.bench.mjs (issue 51, Must 1), run as its own process on the bench's nats-server: a plain
// nats.js pipeline doing the least loom's durable guarantee needs. A stream on file storage, a work queue as a
// workflow's stream is, with message ids (duplicates refused within the window); the publisher keeps at most `window`
// publishes unanswered (each answered once JetStream stored it); a durable pull consumer with explicit acks reads in
// batches of `batch`, parses each message, runs the article pipeline's transform and filter as plain JavaScript, and
// acknowledges each. Timed from the first publish until every message is processed. Prints one JSON line:
// { messages, seconds, perSecond, cpuUs } (this process's CPU a message, publisher and consumer together).
import { AckPolicy, connect, JSONCodec, RetentionPolicy, StorageType } from 'nats';

const { url, messages, window, batch } = JSON.parse(process.argv[2]);
const STREAM = 'RAW_BASELINE';
const SUBJECT = 'raw.baseline.in';
const codec = JSONCodec();

/** The article payload the feeder publishes (node-red-baseline.mjs's samplePayload). */
const payload = (index) => ({ id: index, title: `article ${index}`, text: index % 2 === 0 ? 'the quick brown fox jumps' : 'too short' });

const nc = await connect({ servers: url });
const jsm = await nc.jetstreamManager();
await jsm.streams.delete(STREAM).catch(() => undefined);
await jsm.streams.add({ name: STREAM, subjects: [SUBJECT], storage: StorageType.File, retention: RetentionPolicy.Workqueue });
await jsm.consumers.add(STREAM, { durable_name: 'raw', ack_policy: AckPolicy.Explicit, max_ack_pending: 10_000 });
const js = nc.jetstream();
const consumer = await js.consumers.get(STREAM, 'raw');

const cpuBefore = process.cpuUsage();
const started = performance.now();
let processed = 0;
let passed = 0;
const consumed = (async () => {
  const delivered = await consumer.consume({ max_messages: batch });
  for await (const message of delivered) {
    const body = codec.decode(message.data);
    const transformed = { ...body, title: String(body.title).toUpperCase(), words: String(body.text).split(' ').length };
    if (transformed.words > 3) passed++;
    message.ack();
    if (++processed === messages) break;
  }
})();
const unanswered = [];
for (let index = 0; index < messages; index++) {
  if (unanswered.length >= window) await unanswered.shift();
  unanswered.push(js.publish(SUBJECT, codec.encode(payload(index)), { msgID: `raw-${index}` }));
}
await Promise.all(unanswered);
await consumed;
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
await jsm.streams.delete(STREAM);
await nc.drain();
process.stdout.write(`${JSON.stringify({ messages, passed, seconds, perSecond: messages / seconds, cpuUs: (cpu.user + cpu.system) / messages })}\n`);
process.exit(0);
