// Several executors sharing the work (issue 35): throughput of one workflow run by 1, 2 and 3 executor processes on one
// nats-server (the control process serving secrets, config store and audit, as in services/cli/test/executor-cluster),
// the 1-executor run the baseline of the same run. Two pipelines, each message published with PublishMessages (100 a
// call, 4 callers) and timed from the first publish until the pipeline's last step answered every message:
// - I/O-bound: inlet → HTTP enricher (concurrency 1 on each executor) against a local HTTP server answering after 5 ms →
//   logger. The machine's cores are not the bound: the targets are ≥ 1.8× at 2 executors and ≥ 2.5× at 3.
//   A worker sends the whole batch it takes at once, so each link holds one message (loom.executor.queueCapacity=1):
//   one request in flight an executor, as concurrency 1 means here.
// - CPU-bound: inlet → JavaScript transformer spinning about SPIN iterations a message (concurrency 1) → HTTP enricher
//   answering at once (the count) → logger. Each executor keeps about one core busy, so the machine's cores cap it.
// Each figure is the median of RUNS runs after a warm-up run, each on a fresh workflow. BENCH_SCALE scales the message
// counts (default 1).
import { createServer } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { ExecutorClient, WorkflowState, WorkflowStoreClient } from '@loom/contracts';
import { COMPONENT_KINDS, componentInstance as instance } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, createClient } from '@loom/service-kit';
import { CLUSTER_CONTROL_ARGUMENTS, clusterExecutorArguments, startNatsServer } from '@loom/testing';
import { ensureNats } from '../scripts/test-env/nats.mjs';
import { median, startLoomServe } from './loom-serve.mjs';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const RUNS = 3;
const EXECUTORS = [1, 2, 3];
/** The I/O-bound endpoint's answer time. */
const DELAY_MS = 5;
/** Loop iterations of the CPU-bound script a message (a few milliseconds of one core). */
const SPIN = 400_000;
const PIPELINES = [
  { key: 'io', label: `I/O-bound (HTTP enricher, ${DELAY_MS} ms answers, concurrency 1 an executor)`, messages: Math.round(1_500 * SCALE) },
  { key: 'cpu', label: `CPU-bound (JavaScript transformer, ${SPIN.toLocaleString('en')} iterations a message)`, messages: Math.round(600 * SCALE) },
];
const TARGETS = { 2: 1.8, 3: 2.5 };
const PUBLISH_BATCH = 100;
const PUBLISH_CALLERS = 4;

/** The endpoint both pipelines call: answers `/slow/<id>` after DELAY_MS and `/count/<id>` at once; tells when every id of a run was answered. */
async function startEndpoint() {
  let run = { seen: new Set(), target: Infinity, done: () => {} };
  const server = createServer((request, response) => {
    const [, kind, id] = (request.url ?? '').split('/');
    const answer = () => {
      run.seen.add(id);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      if (run.seen.size >= run.target) run.done();
    };
    if (kind === 'slow') setTimeout(answer, DELAY_MS);
    else answer();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    /** Resolves once `count` distinct ids were answered from now on. */
    expect(count) {
      return new Promise((resolve) => (run = { seen: new Set(), target: count, done: resolve }));
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Workflow `name` of pipeline `key`, calling the endpoint on `port`. */
function pipelineWorkflow(key, name, port) {
  const middle =
    key === 'io'
      ? [instance(COMPONENT_KINDS.HTTP_ENRICHER, 'enrich', { url: `http://127.0.0.1:${port}/slow/{id}`, target_field: 'enriched', concurrency: 1 })]
      : [
          instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, 'spin', {
            language: 'javascript',
            script: `let x = 0; for (let i = 0; i < ${SPIN}; i++) x = (x * 31 + i) % 1000003; return { ...body, x };`,
            concurrency: 1,
          }),
          instance(COMPONENT_KINDS.HTTP_ENRICHER, 'enrich', { url: `http://127.0.0.1:${port}/count/{id}`, target_field: 'counted', concurrency: 8 }),
        ];
  const chain = [instance(COMPONENT_KINDS.INLET, 'in'), ...middle, instance(COMPONENT_KINDS.LOGGER, 'sink', { level: 'debug' })];
  return {
    name,
    autoStart: false,
    components: chain,
    links: chain.slice(1).map((component, index) => ({ from: chain[index].name, to: component.name })),
    resources: [],
    skills: [],
    workflowResources: [],
  };
}

/** Starts `name` on the first executor (a start reaches every one) and waits until each reports its part running. */
async function startEverywhere(clients, name) {
  await call(clients[0], 'startWorkflow', { name });
  for (;;) {
    const { executors } = await call(clients[0], 'getWorkflowStatus', { name });
    if (executors.length === clients.length && executors.every((part) => part.state === WorkflowState.WORKFLOW_STATE_RUNNING)) return;
    await new Promise((resolve) => setTimeout(resolve, 50)); // polled: the parts arrive as each executor reports
  }
}

/** Publishes `count` messages (ids `<prefix>-<n>`) into `name` through `client`. */
async function publish(client, name, prefix, count) {
  let next = 0;
  const caller = async () => {
    while (next < count) {
      const from = next;
      next = Math.min(count, next + PUBLISH_BATCH);
      const messages = [];
      for (let index = from; index < next; index++) messages.push({ body: { id: `${prefix}-${index}` }, headers: {}, messageId: `${prefix}-${index}` });
      const { results } = await call(client, 'publishMessages', { workflowName: name, inlet: 'in', messages });
      const refused = results.find((result) => !result.accepted && !result.duplicate);
      if (refused !== undefined) throw new Error(`a message was refused: ${JSON.stringify(refused.error)}`);
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_CALLERS }, caller));
}

/** One cluster of `count` executors: messages a second of each pipeline, the median of RUNS runs (and the runs). */
async function measureCluster(count, endpoint) {
  const nats = await startNatsServer();
  const control = await startLoomServe({ args: ['--set', 'loom.secrets.generateKeys=true', ...CLUSTER_CONTROL_ARGUMENTS] });
  const executors = [];
  const clients = [];
  const store = createClient(WorkflowStoreClient, control.address, { retry: false });
  try {
    for (let index = 0; index < count; index++) {
      const executor = await startLoomServe({
        args: ['--set', 'loom.secrets.generateKeys=true', '--set', 'loom.executor.queueCapacity=1', ...clusterExecutorArguments(control.address, nats.url)],
      });
      executors.push(executor);
      clients.push(createClient(ExecutorClient, executor.address, { retry: false, deadlineMs: 120_000 }));
    }
    const figures = {};
    for (const [position, pipeline] of PIPELINES.entries()) {
      const runs = [];
      // run 0 warms the executors up (modules, connections, the script isolate) and is not counted
      for (let run = 0; run <= RUNS; run++) {
        const serial = String(count * 100 + position * 10 + run).padStart(12, '0');
        const name = `Cluster ${pipeline.key} ${count} ${run}_6c7d8e9f-0a1b-4c2d-8e3f-${serial}`;
        await call(store, 'putWorkflow', { workflow: workflowToProto(pipelineWorkflow(pipeline.key, name, endpoint.port)) });
        await startEverywhere(clients, name);
        const answered = endpoint.expect(pipeline.messages);
        const began = performance.now();
        await publish(clients[0], name, `${pipeline.key}-${count}-${run}`, pipeline.messages);
        await answered;
        if (run > 0) runs.push(pipeline.messages / ((performance.now() - began) / 1000));
        await call(clients[0], 'stopWorkflow', { name });
      }
      figures[pipeline.key] = { perSecond: median(runs), runs };
    }
    return figures;
  } finally {
    for (const client of [...clients, store]) client.close();
    for (const loom of [...executors, control]) await loom.stop();
    await nats.close();
  }
}

Object.assign(process.env, await ensureNats());
const endpoint = await startEndpoint();
const results = new Map();
try {
  for (const count of EXECUTORS) results.set(count, await measureCluster(count, endpoint));
} finally {
  await endpoint.close();
}

const fmt = (value) => Math.round(value).toLocaleString('en');
console.log(
  `\n${cpus().length} cores, load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')} at the end`,
);
console.log('pipeline | executors | msg/s (median of 3; runs) | against 1 executor | target');
for (const pipeline of PIPELINES) {
  const baseline = results.get(1)[pipeline.key].perSecond;
  for (const count of EXECUTORS) {
    const { perSecond, runs } = results.get(count)[pipeline.key];
    const ratio = perSecond / baseline;
    const target = pipeline.key === 'io' && TARGETS[count] !== undefined ? `≥ ${TARGETS[count]}×: ${ratio >= TARGETS[count] ? 'met' : 'NOT met'}` : '—';
    console.log(`${pipeline.label} | ${count} | ${fmt(perSecond)} (${runs.map(fmt).join(' / ')}) | ${ratio.toFixed(2)}× | ${target}`);
  }
}
process.exit(0);
