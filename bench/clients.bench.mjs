// PublishMessage at 64 concurrent calls from the Python client (clients/python) against the same from the TypeScript
// client (grpc-js, @loom/service-kit's createClient: bench/publish-feeder.mjs), into the same run of the same `loom
// serve`: the article pipeline (inlet → JavaScript transformer → JavaScript filter → sink), as bench/publish.bench.mjs
// runs it. Each client is its own process and sends the same bearer token on every call; each figure is messages per
// second from the first call until the sink has every message that passes the filter, with p50/p99 per call, the
// median of 3 runs taken in turns (TypeScript, Python's helper from 64 threads, Python's grpc.aio with 64 tasks), and
// the CPU time loom and the client spent a message. BENCH_SCALE scales the message counts (default 1).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ExecutorClient, WorkflowStoreClient } from '@loom/contracts';
import { workflowToProto } from '@loom/domain/proto';
import { call, createClient } from '@loom/service-kit';
import { EXECUTOR_STACK_ARGUMENTS } from '@loom/testing';
import { ensureClients } from '../scripts/test-env/clients.mjs';
import { articleWorkflow } from './article-pipeline.mjs';
import { feed } from './feed.mjs';
import { cpuSecondsOf, median, startLoomServe } from './loom-serve.mjs';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const RUNS = 3;
const CALLERS = 64;
const MESSAGES = Math.round(10_000 * SCALE);
const WORKFLOW = 'Clients bench_3c5d7e9f-1a2b-4c3d-8e4f-5a6b7c8d9e0f';
const TOKEN = 'bench-clients-token-5e8a1c3f7b9d';

/** Runs the Python feeder (bench/python-client-feeder.py) with the client's venv; resolves with its JSON line. */
function feedPython(python, settings) {
  return new Promise((resolve, reject) => {
    const feeder = fileURLToPath(new URL('./python-client-feeder.py', import.meta.url));
    const child = spawn(python, [feeder, JSON.stringify(settings)], { stdio: ['ignore', 'pipe', 'inherit'] });
    const out = [];
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(Buffer.concat(out).toString())) : reject(new Error(`python feeder ${settings.mode} exited with ${code}`)),
    );
  });
}

const { LOOM_CLIENTS_PYTHON: python } = await ensureClients();
const loom = await startLoomServe({
  args: [
    ...EXECUTOR_STACK_ARGUMENTS,
    '--set',
    `loom.auth.tokens.bench=${TOKEN}`,
    '--set',
    'loom.auth.roles.bench=editor,operator',
    '--set',
    'loom.secrets.generateKeys=true',
  ],
});
const CLIENTS = [
  { label: 'TypeScript (grpc-js, createClient)', run: (settings) => feed({ ...settings, mode: 'unary', batch: 1 }) },
  { label: "Python, the helper's publish from 64 threads", run: (settings) => feedPython(python, { ...settings, mode: 'threads' }) },
  { label: 'Python, grpc.aio stub, 64 tasks', run: (settings) => feedPython(python, { ...settings, mode: 'aio' }) },
];
const figures = new Map(CLIENTS.map(({ label }) => [label, []]));
try {
  const store = createClient(WorkflowStoreClient, loom.address, { retry: false, token: TOKEN });
  const executor = createClient(ExecutorClient, loom.address, { retry: false, token: TOKEN });
  try {
    await call(store, 'putWorkflow', { workflow: workflowToProto(articleWorkflow(WORKFLOW, { sinkOptions: { level: 'debug' } })) });
    await call(executor, 'startWorkflow', { name: WORKFLOW });
  } finally {
    store.close();
    executor.close();
  }
  const settings = { address: loom.address, token: TOKEN, messages: MESSAGES, callers: CALLERS, workflow: WORKFLOW, inlet: 'in', sink: 'sink' };
  // in turns, so that a machine busy with other work weighs on each client alike
  for (let run = 0; run < RUNS; run++) {
    for (const client of CLIENTS) {
      const cpuBefore = cpuSecondsOf(loom.child.pid);
      const result = await client.run(settings);
      const loomCpuUs = ((cpuSecondsOf(loom.child.pid) - cpuBefore) * 1e6) / result.messages;
      figures.get(client.label).push({ ...result, loomCpuUs });
    }
  }
} finally {
  await loom.stop();
}

const fmt = (value) => Math.round(value).toLocaleString('en');
const summary = new Map();
console.log(`PublishMessage, ${CALLERS} concurrent calls, ${fmt(MESSAGES)} messages a run, the same run of one loom serve`);
console.log('\nclient | msg/s (median of 3) | runs | p50 ms | p99 ms | CPU µs a message: loom, client');
for (const [label, runs] of figures) {
  const middle = median(runs.map((run) => run.perSecond));
  const chosen = runs.find((run) => run.perSecond === middle) ?? runs[0];
  summary.set(label, middle);
  console.log(
    `${label} | ${fmt(middle)} | ${runs.map((run) => fmt(run.perSecond)).join(' / ')} | ${chosen.p50Ms.toFixed(2)} | ${chosen.p99Ms.toFixed(2)} | ` +
      `${fmt(median(runs.map((run) => run.loomCpuUs)))}, ${fmt(median(runs.map((run) => run.feederCpuUs)))}`,
  );
}
const typescript = summary.get(CLIENTS[0].label);
console.log('');
for (const { label } of CLIENTS.slice(1)) {
  console.log(`${label} / TypeScript: ${(summary.get(label) / typescript).toFixed(2)}x`);
}
process.exit(0);
