// The paths a user takes into loom, measured as a user would: the article pipeline (inlet → JavaScript transformer →
// JavaScript filter → sink) behind a real `loom serve` process, fed by a separate process (bench/publish-feeder.mjs):
// PublishMessage at 1, 16 and 64 callers, PublishMessages (100 messages a call), PublishStream, and a webhook source
// (one message a request, and 100 a request). Each figure is messages per second from the first send until the sink
// has every message that passes the filter, with p50/p99 per call, the median of 3 runs, and its share of the same
// flow run in-process (bench/executor.bench.mjs's measurement) in the same run, and the CPU time loom and the feeder
// spent a message. GetWorkflowStatus at 64 callers, which carries no message, is measured beside them as the floor of
// one unary call on this server, and PublishMessage at 64 callers against a grpc-js server that does no work
// (bench/noop-executor-server.mjs) as the ceiling of the unary figures: the most any server could take from this feeder.
// With LOOM_BASELINE_MAIN=<another checkout>/services/cli/dist/main.js the single-message figures are measured against
// that build too, in the same run, for a ratio to it. BENCH_SCALE scales the message counts (default 1).
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS, componentInstance as instance } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { ExecutorClient, WorkflowStoreClient } from '@loom/contracts';
import { componentFactories, WorkflowRun } from '@loom/executor';
import { call, createClient } from '@loom/service-kit';
import { createLogger } from '@loom/telemetry';
import { articleWorkflow } from './article-pipeline.mjs';
import { countingSink, measureThroughput } from './counting-sink.mjs';
import { feed } from './feed.mjs';
import { cpuSecondsOf, median, startLoomServe } from './loom-serve.mjs';
import { samplePayload } from './node-red-baseline.mjs';
import { EXECUTOR_STACK_ARGUMENTS } from '@loom/testing';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const RUNS = 3;
const INLET_WORKFLOW = 'Publish bench_7d1e2f3a-4b5c-4d6e-8f7a-9b0c1d2e3f4a';
const HOOK_WORKFLOW = 'Webhook bench_8e2f3a4b-5c6d-4e7f-9a8b-0c1d2e3f4a5b';
/** The bench identity's token: an operator, which the webhook's default (bearer) authentication wants. */
const HOOK_TOKEN = 'bench-operator-token-7c4e1a9d2b5f';

/** The article pipeline from `source` (an inlet, or a webhook) to a sink that logs at debug (off at info). */
const pipeline = (name, source) => articleWorkflow(name, { source, sinkOptions: { level: 'debug' } });

async function inProcess() {
  const sink = countingSink();
  const factories = new Map(componentFactories(loadConfig({ env: {} })));
  factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
  const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });
  const run = await WorkflowRun.start(pipeline('bench', instance(COMPONENT_KINDS.INLET, 'in')), { factories, logger });
  return measureThroughput(run, sink, { messages: 200_000 * SCALE, warmup: 5_000, samplePayload, label: 'in-process' });
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts a loom, pushes and starts the two workflows; answers the loom and the webhook's URL. */
async function serveWithWorkflows(main) {
  const loom = await startLoomServe({
    ...(main === undefined ? {} : { main }),
    args: [
      ...EXECUTOR_STACK_ARGUMENTS,
      // the webhook takes an operator's bearer token (its default authentication); a build before that ignores the header
      '--set',
      `loom.auth.tokens.bench=${HOOK_TOKEN}`,
      '--set',
      'loom.auth.roles.bench=operator',
      // this build generates a development key ring only when told to; the baseline build did it unasked and knows no such key
      ...(main === undefined ? ['--set', 'loom.secrets.generateKeys=true'] : []),
    ],
  });
  const hookPort = await freePort();
  const store = createClient(WorkflowStoreClient, loom.address, { retry: false });
  const executor = createClient(ExecutorClient, loom.address, { retry: false });
  try {
    for (const workflow of [
      pipeline(INLET_WORKFLOW, instance(COMPONENT_KINDS.INLET, 'in')),
      pipeline(HOOK_WORKFLOW, instance(COMPONENT_KINDS.WEBHOOK, 'hook', { port: hookPort, path: '/articles' })),
    ]) {
      await call(store, 'putWorkflow', { workflow: workflowToProto(workflow) });
      await call(executor, 'startWorkflow', { name: workflow.name });
    }
  } finally {
    store.close();
    executor.close();
  }
  return { loom, webhookUrl: `http://127.0.0.1:${hookPort}/articles` };
}

/** The no-op server (bench/noop-executor-server.mjs) as a `served` of measureCases: no workflow, so no sink to wait for. */
async function serveNoop() {
  const child = spawn(process.execPath, [new URL('./noop-executor-server.mjs', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const port = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line).port));
    void exited.then((code) => reject(new Error(`the no-op server exited with ${code} before listening`)));
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return { loom: { child, address: `127.0.0.1:${port}`, stop }, sink: '' };
}

const CASES = [
  { label: 'PublishMessage, 1 caller', mode: 'unary', callers: 1, batch: 1, messages: 3_000 },
  { label: 'PublishMessage, 16 callers', mode: 'unary', callers: 16, batch: 1, messages: 10_000 },
  { label: 'PublishMessage, 64 callers', mode: 'unary', callers: 64, batch: 1, messages: 20_000 },
  { label: 'PublishMessages, 100 a call, 8 callers', mode: 'batch', callers: 8, batch: 100, messages: 200_000 },
  { label: 'PublishStream, 100 a request, 8 unanswered', mode: 'stream', callers: 8, batch: 100, messages: 200_000 },
  { label: 'webhook, 1 a request, 64 callers', mode: 'webhook', callers: 64, batch: 1, messages: 20_000, webhook: true },
  { label: 'webhook, 100 a request (JSON array), 8 callers', mode: 'webhook', callers: 8, batch: 100, messages: 200_000, webhook: true },
];
/** Not a path a message takes: the cheapest RPC of the same server, the floor under any unary call here. */
const REFERENCE = { label: 'GetWorkflowStatus (no message), 64 callers', mode: 'status', callers: 64, batch: 1, messages: 20_000 };
/** The unary case the target names, against the no-op server. */
const CEILING = CASES.find((spec) => spec.label === 'PublishMessage, 64 callers');

async function measureCases(served, cases) {
  const figures = new Map();
  for (const spec of cases) {
    const runs = [];
    for (let run = 0; run < RUNS; run++) {
      const serverCpuBefore = cpuSecondsOf(served.loom.child.pid);
      const result = await feed({
        address: served.loom.address,
        mode: spec.mode,
        callers: spec.callers,
        batch: spec.batch,
        messages: Math.max(spec.batch, Math.round(spec.messages * SCALE)),
        workflow: spec.webhook ? HOOK_WORKFLOW : INLET_WORKFLOW,
        inlet: 'in',
        sink: served.sink ?? 'sink',
        webhookUrl: served.webhookUrl,
        webhookToken: HOOK_TOKEN,
      });
      const serverCpuSeconds = cpuSecondsOf(served.loom.child.pid) - serverCpuBefore;
      runs.push({ ...result, serverCpuUs: (serverCpuSeconds * 1e6) / result.messages });
    }
    const middle = median(runs.map((run) => run.perSecond));
    const chosen = runs.find((run) => run.perSecond === middle) ?? runs[0];
    figures.set(spec.label, {
      perSecond: middle,
      runs: runs.map((run) => Math.round(run.perSecond)),
      p50Ms: chosen.p50Ms,
      p99Ms: chosen.p99Ms,
      serverCpuUs: median(runs.map((run) => run.serverCpuUs)),
      feederCpuUs: median(runs.map((run) => run.feederCpuUs)),
    });
  }
  return figures;
}

const fmt = (value) => Math.round(value).toLocaleString('en');

const local = await inProcess();
console.log(`in-process (the same flow in this process, one run of ${fmt(200_000 * SCALE)}): ${fmt(local.perSecond)} msg/s`);

const served = await serveWithWorkflows();
let figures;
try {
  figures = await measureCases(served, [...CASES, REFERENCE]);
} finally {
  await served.loom.stop();
}
const noop = await serveNoop();
let ceiling;
try {
  ceiling = (await measureCases(noop, [CEILING])).get(CEILING.label);
} finally {
  await noop.loom.stop();
}
// the in-process figure again after the served runs: the machine is shared, so both ends of the run are reported
const localAfter = await inProcess();
const inProcessPerSecond = median([local.perSecond, localAfter.perSecond]);
console.log(`in-process again after the served runs: ${fmt(localAfter.perSecond)} msg/s; their mean is the 100% below: ${fmt(inProcessPerSecond)} msg/s`);
console.log('\npath | msg/s (median of 3) | runs | p50 ms | p99 ms | share of in-process | CPU µs a message: loom, feeder');
for (const [label, figure] of figures) {
  const share = label === REFERENCE.label ? '(calls/s; no message)' : `${((figure.perSecond / inProcessPerSecond) * 100).toFixed(1)}%`;
  console.log(
    `${label} | ${fmt(figure.perSecond)} | ${figure.runs.map(fmt).join(' / ')} | ${figure.p50Ms.toFixed(2)} | ${figure.p99Ms.toFixed(2)} | ${share} | ${fmt(figure.serverCpuUs)}, ${fmt(figure.feederCpuUs)}`,
  );
}
const unary64 = figures.get(CEILING.label);
console.log(
  `\nceiling: ${CEILING.label} against a no-op grpc-js server (same feeder, no workflow) | ${fmt(ceiling.perSecond)} calls/s (${ceiling.runs.map(fmt).join(' / ')}), p50 ${ceiling.p50Ms.toFixed(2)} ms, p99 ${ceiling.p99Ms.toFixed(2)} ms | CPU µs a call: server ${fmt(ceiling.serverCpuUs)}, feeder ${fmt(ceiling.feederCpuUs)} | loom reaches ${((unary64.perSecond / ceiling.perSecond) * 100).toFixed(1)}% of it`,
);

const baselineMain = process.env.LOOM_BASELINE_MAIN;
if (baselineMain !== undefined && baselineMain !== '') {
  const singleCases = CASES.filter((spec) => spec.mode === 'unary');
  const baseline = await serveWithWorkflows(baselineMain);
  let before;
  try {
    before = await measureCases(baseline, singleCases);
  } finally {
    await baseline.loom.stop();
  }
  console.log(`\nbaseline build ${baselineMain}, same run:`);
  for (const spec of singleCases) {
    const old = before.get(spec.label);
    const now = figures.get(spec.label);
    console.log(
      `${spec.label} | baseline ${fmt(old.perSecond)} msg/s (${old.runs.map(fmt).join(' / ')}), p50 ${old.p50Ms.toFixed(2)} ms, p99 ${old.p99Ms.toFixed(2)} ms | this build ${fmt(now.perSecond)} | ratio ${(now.perSecond / old.perSecond).toFixed(2)}x | loom CPU µs a message: baseline ${fmt(old.serverCpuUs)}, this build ${fmt(now.serverCpuUs)}`,
    );
  }
  const old64 = before.get(CEILING.label);
  console.log(
    `the no-op server's ceiling is ${(ceiling.perSecond / old64.perSecond).toFixed(2)}x the baseline at 64 callers: no server reaches more from this feeder`,
  );
}
process.exit(0);
