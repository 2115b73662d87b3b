// Messages per second through inlet → JavaScript transformer → JavaScript filter → sink: loom's executor (scripts in
// isolated-vm, one isolate per component, batches of up to 256 messages per isolate call) against Node-RED 4 running
// the same flow with function nodes (bench/node-red-baseline.mjs), both in this process, in the same run.
// Both count messages taken in and fully processed per second (half are filtered out); both sinks only count.
// Then light traffic on loom: one message at a time (each script call holds one message), as CPU time per message.
import { Writable } from 'node:stream';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS } from '@loom/domain';
import { componentFactories, WorkflowRun } from '@loom/executor';
import { articleWorkflow } from './article-pipeline.mjs';
import { countingSink, measureThroughput } from './counting-sink.mjs';
import { createLogger } from '@loom/telemetry';
import { measureNodeRed, samplePayload, stopNodeRed } from './node-red-baseline.mjs';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 200_000);
const WARMUP = 5_000;
const LIGHT_MESSAGES = Number(process.env.BENCH_LIGHT_MESSAGES ?? 5_000);
const NODE_RED_TRANSFORM =
  'msg.payload = { ...msg.payload, title: String(msg.payload.title).toUpperCase(), words: String(msg.payload.text).split(" ").length }; return msg;';
const NODE_RED_FILTER = 'return msg.payload.words > 3 ? msg : null;';

const sink = countingSink();

async function startArticleRun() {
  const factories = new Map(componentFactories(loadConfig({ env: {} })));
  factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
  const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });
  return WorkflowRun.start(articleWorkflow('bench'), { factories, logger });
}

/**
 * Light traffic: one message at a time, each published only once the one before it reached the sink, so every
 * script call holds one message. Answers the process's CPU time (user + system) per message.
 */
async function measureLightTraffic(messages) {
  const run = await startArticleRun();
  const withdrawal = new AbortController();
  const one = async (index) => {
    const arrived = sink.expect(1);
    await run.publish('in', { id: `light-${index}`, body: samplePayload(2 * index), headers: {} }, withdrawal);
    await arrived;
  };
  for (let index = 0; index < 200; index++) await one(index);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let index = 200; index < 200 + messages; index++) await one(index);
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  await run.stop(10_000);
  return { cpuMicros: (used.user + used.system) / messages, perSecond: messages / seconds };
}

async function measureLoom() {
  const run = await startArticleRun();
  return measureThroughput(run, sink, { messages: MESSAGES, warmup: WARMUP, samplePayload, label: "loom's flow" });
}

const loom = await measureLoom();
console.log(`loom executor: ${MESSAGES} messages in ${loom.seconds.toFixed(2)} s = ${loom.perSecond.toFixed(0)} msg/s (isolated-vm, batches of up to 256)`);
const light = await measureLightTraffic(LIGHT_MESSAGES);
const batchedMicros = 1e6 / loom.perSecond;
console.log(
  `loom executor, light traffic (one message at a time, ${LIGHT_MESSAGES} messages): ${light.cpuMicros.toFixed(0)} µs of CPU per message, ${light.perSecond.toFixed(0)} msg/s; ` +
    `${(light.cpuMicros / batchedMicros).toFixed(1)}x the wall time per message of full batches (${batchedMicros.toFixed(1)} µs)`,
);
try {
  const red = await measureNodeRed({ transformCode: NODE_RED_TRANSFORM, filterCode: NODE_RED_FILTER, messages: MESSAGES, expectedAtSink: MESSAGES / 2 });
  console.log(`Node-RED ${red.version}: ${MESSAGES} messages in ${red.seconds.toFixed(2)} s = ${red.perSecond.toFixed(0)} msg/s (function nodes)`);
  console.log(`ratio loom / Node-RED: ${(loom.perSecond / red.perSecond).toFixed(2)}x (target >= 1.5x)`);
} finally {
  await stopNodeRed();
}
process.exit(0);
