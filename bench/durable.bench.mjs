// Durable messages (issue 34) against the in-memory mode, measured in the same run the same way: a real `loom serve`
// without NATS (in-memory: a publish is answered once a queue of the executor holds it), then one with
// loom.messaging.nats.servers on a nats-server of its own (JetStream on file storage in a temporary directory: a publish
// is answered once JetStream stored it, each message acknowledged once all it led to is finished). For each mode:
// PublishStream into the article pipeline (bench/article-pipeline.mjs; messages per second until the sink has every
// message that passes the filter, the target ≥ 40% of in-memory), PublishMessage at 64 callers (the median of
// 3 runs each, fed by bench/publish-feeder.mjs in its own process), and the publish-to-graph latency: one message at a
// time published into an inlet → graph writer workflow on the embedded graph, timed from the send until a query finds
// its node (p50, p99). BENCH_SCALE scales the message counts (default 1). A third loom, durable with
// loom.messaging.stream.keepProcessedMs set (issue 50: each acknowledged message also copied into the workflow's kept
// stream for replay), is measured the same way on a nats-server of its own: the cost of keeping processed messages. A
// fourth, durable on a nats-server with JetStream's sync_interval always (issue 51: each message fsynced before its
// publish is answered, as deploy/compose and the chart run NATS), gives the cost of that policy against the default.
// The raw baseline (issue 51, Must 1): bench/nats-baseline.mjs in its own process on the first nats-server, a plain
// nats.js pipeline doing the least the durable guarantee needs (800 publishes unanswered at most, pulls of 256, the
// article transform and filter, an ack each), the median of 3 runs of PublishStream's message count, against loom's
// durable PublishStream figure. Since issue 51 (Must 2) a PublishStream request's messages are stored as one JetStream
// message (a batch envelope), delivered, processed one by one and acknowledged to JetStream once all are finished; the
// load average is printed before and after, as the figures swing with it on this shared 2-core machine.
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { ExecutorClient, WorkflowStoreClient } from '@loom/contracts';
import { COMPONENT_KINDS, componentInstance as instance, findResourceDefinition, RESOURCE_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { openGraphStore } from '@loom/graph';
import { call, createClient } from '@loom/service-kit';
import { EXECUTOR_STACK_ARGUMENTS, startNatsServer } from '@loom/testing';
import { ensureNats } from '../scripts/test-env/nats.mjs';
import { articleWorkflow } from './article-pipeline.mjs';
import { feed } from './feed.mjs';
import { cpuSecondsOf, median, quantile, startLoomServe } from './loom-serve.mjs';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const RUNS = 3;
const PIPELINE = 'Durable bench_3f4a5b6c-7d8e-4f9a-8b0c-1d2e3f4a5b6c';
const TO_GRAPH = 'Durable latency_4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d';
const GRAPH = 'durable_bench';
const LATENCY_MESSAGES = Math.max(50, Math.round(300 * SCALE));
const LATENCY_WARMUP = 20;
const CASES = [
  { label: 'PublishStream, 100 a request, 8 unanswered', mode: 'stream', callers: 8, batch: 100, messages: 50_000 },
  { label: 'PublishMessage, 64 callers', mode: 'unary', callers: 64, batch: 1, messages: 10_000 },
];
/** The target for PublishStream: durable at least this share of in-memory. */
const STREAM_TARGET = 0.4;

/** The raw nats.js pipeline's settings: unanswered publishes at most, messages a pull. */
const RAW_WINDOW = 800;
const RAW_BATCH = 256;

/** One run of bench/nats-baseline.mjs on `url`: { messages, seconds, perSecond, cpuUs }. */
function rawBaseline(url, messages) {
  return new Promise((resolve, reject) => {
    const settings = JSON.stringify({ url, messages, window: RAW_WINDOW, batch: RAW_BATCH });
    const child = spawn(process.execPath, [new URL('./nats-baseline.mjs', import.meta.url).pathname, settings], { stdio: ['ignore', 'pipe', 'inherit'] });
    const out = [];
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(Buffer.concat(out).toString())) : reject(new Error(`nats-baseline exited with ${code}`))));
  });
}

/** Inlet → graph writer (one statement a message, as a latency wants) MERGEing an article node on the embedded graph. */
function graphWorkflow() {
  const source = instance(COMPONENT_KINDS.INLET, 'in');
  const writer = {
    ...instance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, 'write', { query: 'MERGE (a:Article {id: $id}) SET a.title = $title' }),
    resource: {
      name: 'Embedded graph_5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e',
      resource: findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE),
      parameters: { host: 'embedded', user: 'postgres', graph: GRAPH },
    },
  };
  return {
    name: TO_GRAPH,
    autoStart: false,
    components: [source, writer],
    links: [{ from: 'in', to: 'write' }],
    resources: [],
    skills: [],
    workflowResources: [],
  };
}

/** Starts a loom (durable when `natsUrl` is given), pushes and starts both workflows; answers it and its graph's port. */
async function serve(natsUrl, settings = []) {
  let graphPort;
  const loom = await startLoomServe({
    args: [
      ...EXECUTOR_STACK_ARGUMENTS,
      '--set',
      'loom.secrets.generateKeys=true',
      ...(natsUrl === undefined ? [] : ['--set', `loom.messaging.nats.servers=${natsUrl}`]),
      ...settings.flatMap((setting) => ['--set', setting]),
    ],
    onLine: (entry) => {
      if (typeof entry.msg === 'string' && entry.msg.startsWith('embedded graph')) graphPort = entry.port;
    },
  });
  const store = createClient(WorkflowStoreClient, loom.address, { retry: false });
  const executor = createClient(ExecutorClient, loom.address, { retry: false });
  try {
    for (const workflow of [articleWorkflow(PIPELINE, { sinkOptions: { level: 'debug' } }), graphWorkflow()]) {
      await call(store, 'putWorkflow', { workflow: workflowToProto(workflow) });
      await call(executor, 'startWorkflow', { name: workflow.name });
    }
  } finally {
    store.close();
    executor.close();
  }
  if (graphPort === undefined) throw new Error('loom logged no embedded graph port');
  return { loom, graphPort };
}

/** The median of RUNS feeder runs of each case: messages per second, its runs, p50/p99 per call, loom's CPU a message. */
async function measureCases(loom) {
  const figures = new Map();
  for (const spec of CASES) {
    const runs = [];
    for (let run = 0; run < RUNS; run++) {
      const cpuBefore = cpuSecondsOf(loom.child.pid);
      const messages = Math.max(spec.batch, Math.round(spec.messages * SCALE));
      const result = await feed({ address: loom.address, ...spec, messages, workflow: PIPELINE, inlet: 'in', sink: 'sink' });
      runs.push({ ...result, loomCpuUs: ((cpuSecondsOf(loom.child.pid) - cpuBefore) * 1e6) / result.messages });
    }
    const middle = median(runs.map((run) => run.perSecond));
    const chosen = runs.find((run) => run.perSecond === middle) ?? runs[0];
    figures.set(spec.label, {
      perSecond: middle,
      runs: runs.map((run) => run.perSecond),
      p50Ms: chosen.p50Ms,
      p99Ms: chosen.p99Ms,
      loomCpuUs: median(runs.map((run) => run.loomCpuUs)),
    });
  }
  return figures;
}

/** Publishes one message at a time into the graph workflow and times each until a query finds its node. */
async function publishToGraphLatency(loom, graphPort) {
  const graph = openGraphStore({
    resource: findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE),
    parameters: { host: '127.0.0.1', port: graphPort, user: 'postgres', graph: GRAPH },
  });
  const executor = createClient(ExecutorClient, loom.address, { retry: false });
  const latencies = [];
  try {
    for (let index = 0; index < LATENCY_WARMUP + LATENCY_MESSAGES; index++) {
      const id = `latency-${index}`;
      const began = performance.now();
      await call(executor, 'publishMessage', { workflowName: TO_GRAPH, inlet: 'in', body: { id, title: `article ${index}` }, headers: {}, messageId: id });
      // polled back to back: the node's arrival is seen within one query's round trip
      while ((await graph.run('MATCH (a:Article {id: $id}) RETURN a.id AS id', { id })).length === 0);
      if (index >= LATENCY_WARMUP) latencies.push(performance.now() - began);
    }
  } finally {
    executor.close();
    await graph.close();
  }
  return { p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99) };
}

/** Both measurements on one loom; stops it afterwards. */
async function measureMode(natsUrl, settings = []) {
  const { loom, graphPort } = await serve(natsUrl, settings);
  try {
    const figures = await measureCases(loom);
    const latency = await publishToGraphLatency(loom, graphPort);
    return { figures, latency };
  } finally {
    await loom.stop();
  }
}

const loadNow = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ');
const loadBefore = loadNow();
// the bench's own nats-server, as the tests start one (LOOM_NATS_SERVER, built once into the tools cache)
Object.assign(process.env, await ensureNats());
const nats = await startNatsServer();
let memory;
let durable;
let kept;
let synced;
const raws = [];
try {
  memory = await measureMode(undefined);
  durable = await measureMode(nats.url);
  for (let run = 0; run < RUNS; run++) raws.push(await rawBaseline(nats.url, Math.round(CASES[0].messages * SCALE)));
  // a nats-server of its own: on the first one, the latency's message ids would still be in the streams' duplicate
  // windows, answered duplicate and never processed
  const keeping = await startNatsServer();
  try {
    kept = await measureMode(keeping.url, ['loom.messaging.stream.keepProcessedMs=3600000']);
  } finally {
    await keeping.close();
  }
  const syncing = await startNatsServer({ syncInterval: 'always' });
  try {
    synced = await measureMode(syncing.url);
  } finally {
    await syncing.close();
  }
} finally {
  await nats.close();
}

const fmt = (value) => Math.round(value).toLocaleString('en');
console.log(`load average (1 / 5 / 15 min) at the start ${loadBefore}, at the end ${loadNow()} (2 cores)`);
const ms = (value) => value.toFixed(2);
console.log(
  '\npath | in-memory msg/s (median of 3; runs) | durable msg/s (median of 3; runs) | durable / in-memory | p50 / p99 ms a call, in-memory → durable | loom CPU µs a message, in-memory → durable',
);
for (const spec of CASES) {
  const before = memory.figures.get(spec.label);
  const after = durable.figures.get(spec.label);
  console.log(
    `${spec.label} | ${fmt(before.perSecond)} (${before.runs.map(fmt).join(' / ')}) | ${fmt(after.perSecond)} (${after.runs.map(fmt).join(' / ')}) | ` +
      `${((after.perSecond / before.perSecond) * 100).toFixed(1)}% | ${ms(before.p50Ms)} / ${ms(before.p99Ms)} → ${ms(after.p50Ms)} / ${ms(after.p99Ms)} | ` +
      `${fmt(before.loomCpuUs)} → ${fmt(after.loomCpuUs)}`,
  );
}
const stream = CASES[0].label;
const streamShare = durable.figures.get(stream).perSecond / memory.figures.get(stream).perSecond;
console.log(
  `\n${stream}: durable is ${(streamShare * 100).toFixed(1)}% of in-memory (target ≥ ${STREAM_TARGET * 100}%: ${streamShare >= STREAM_TARGET ? 'met' : 'NOT met'})`,
);
const raw = median(raws.map((run) => run.perSecond));
const loomStream = durable.figures.get(stream);
console.log(
  `${stream}, durable, against a plain nats.js pipeline on the same nats-server (${RAW_WINDOW} publishes unanswered, pulls of ${RAW_BATCH}, ` +
    `transform and filter, an ack each): raw ${fmt(raw)} msg/s (median of ${RUNS}; ${raws.map((run) => fmt(run.perSecond)).join(' / ')}), ` +
    `CPU µs a message ${fmt(median(raws.map((run) => run.cpuUs)))} | loom ${fmt(loomStream.perSecond)} msg/s, loom CPU µs a message ${fmt(loomStream.loomCpuUs)} | ` +
    `loom / raw ${(loomStream.perSecond / raw).toFixed(2)}x (target ≥ 1.5x: ${loomStream.perSecond / raw >= 1.5 ? 'met' : 'NOT met'})`,
);
console.log(
  `publish-to-graph latency (${LATENCY_MESSAGES} messages one at a time, inlet → graph writer on the embedded graph): ` +
    `in-memory p50 ${ms(memory.latency.p50Ms)} ms, p99 ${ms(memory.latency.p99Ms)} ms | durable p50 ${ms(durable.latency.p50Ms)} ms, p99 ${ms(durable.latency.p99Ms)} ms | ` +
    `ratio p50 ${(durable.latency.p50Ms / memory.latency.p50Ms).toFixed(2)}x, p99 ${(durable.latency.p99Ms / memory.latency.p99Ms).toFixed(2)}x`,
);
console.log(
  '\nkeeping processed messages (loom.messaging.stream.keepProcessedMs=3600000) | durable msg/s | durable, kept msg/s (median of 3; runs) | kept / durable | loom CPU µs a message, durable → kept',
);
for (const spec of CASES) {
  const before = durable.figures.get(spec.label);
  const after = kept.figures.get(spec.label);
  console.log(
    `${spec.label} | ${fmt(before.perSecond)} | ${fmt(after.perSecond)} (${after.runs.map(fmt).join(' / ')}) | ` +
      `${((after.perSecond / before.perSecond) * 100).toFixed(1)}% | ${fmt(before.loomCpuUs)} → ${fmt(after.loomCpuUs)}`,
  );
}
console.log(
  `publish-to-graph latency, durable → durable keeping processed: p50 ${ms(durable.latency.p50Ms)} → ${ms(kept.latency.p50Ms)} ms, ` +
    `p99 ${ms(durable.latency.p99Ms)} → ${ms(kept.latency.p99Ms)} ms`,
);
console.log(
  '\nJetStream sync_interval always (compose, the chart) | durable msg/s (default 2m) | durable, always msg/s (median of 3; runs) | always / default | p50 / p99 ms a call, default → always | loom CPU µs a message',
);
for (const spec of CASES) {
  const before = durable.figures.get(spec.label);
  const after = synced.figures.get(spec.label);
  console.log(
    `${spec.label} | ${fmt(before.perSecond)} | ${fmt(after.perSecond)} (${after.runs.map(fmt).join(' / ')}) | ` +
      `${((after.perSecond / before.perSecond) * 100).toFixed(1)}% | ${ms(before.p50Ms)} / ${ms(before.p99Ms)} → ${ms(after.p50Ms)} / ${ms(after.p99Ms)} | ` +
      `${fmt(before.loomCpuUs)} → ${fmt(after.loomCpuUs)}`,
  );
}
console.log(
  `publish-to-graph latency, durable → durable with sync_interval always: p50 ${ms(durable.latency.p50Ms)} → ${ms(synced.latency.p50Ms)} ms, ` +
    `p99 ${ms(durable.latency.p99Ms)} → ${ms(synced.latency.p99Ms)} ms`,
);
process.exit(0);
