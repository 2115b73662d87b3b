// Messages per second through inlet → JavaScript transformer → JavaScript filter → sink: loom's executor (scripts in
// isolated-vm, one isolate per component, batches of up to 256 messages per isolate call) against Node-RED 4 running
// the same flow with function nodes (bench/node-red-baseline.mjs), both in this process, in the same run.
// Both count messages taken in and fully processed per second (half are filtered out); both sinks only count.
import { Writable } from 'node:stream';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS, componentInstance as instance } from '@loom/domain';
import { componentFactories, WorkflowRun } from '@loom/executor';
import { countingSink, measureThroughput } from './counting-sink.mjs';
import { createLogger } from '@loom/telemetry';
import { measureNodeRed, samplePayload, stopNodeRed } from './node-red-baseline.mjs';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 200_000);
const WARMUP = 5_000;
const LOOM_TRANSFORM = 'return { ...body, title: String(body.title).toUpperCase(), words: String(body.text).split(" ").length };';
const LOOM_FILTER = 'return body.words > 3;';
const NODE_RED_TRANSFORM = 'msg.payload = { ...msg.payload, title: String(msg.payload.title).toUpperCase(), words: String(msg.payload.text).split(" ").length }; return msg;';
const NODE_RED_FILTER = 'return msg.payload.words > 3 ? msg : null;';

const sink = countingSink();

async function measureLoom() {
  const factories = new Map(componentFactories(loadConfig({ env: {} })));
  factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
  const workflow = {
    name: 'bench',
    autoStart: false,
    components: [
      instance(COMPONENT_KINDS.INLET, 'in'),
      instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, 'transform', { script: LOOM_TRANSFORM, language: 'javascript' }),
      instance(COMPONENT_KINDS.MESSAGE_FILTER, 'filter', { script: LOOM_FILTER, language: 'javascript' }),
      instance(COMPONENT_KINDS.LOGGER, 'sink'),
    ],
    links: [{ from: 'in', to: 'transform' }, { from: 'transform', to: 'filter' }, { from: 'filter', to: 'sink' }],
    resources: [], skills: [], workflowResources: [],
  };
  const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });
  const run = await WorkflowRun.start(workflow, { factories, logger });
  return measureThroughput(run, sink, { messages: MESSAGES, warmup: WARMUP, samplePayload, label: "loom's flow" });
}

const loom = await measureLoom();
console.log(`loom executor: ${MESSAGES} messages in ${loom.seconds.toFixed(2)} s = ${loom.perSecond.toFixed(0)} msg/s (isolated-vm, batches of up to 256)`);
try {
  const red = await measureNodeRed({ transformCode: NODE_RED_TRANSFORM, filterCode: NODE_RED_FILTER, messages: MESSAGES, expectedAtSink: MESSAGES / 2 });
  console.log(`Node-RED ${red.version}: ${MESSAGES} messages in ${red.seconds.toFixed(2)} s = ${red.perSecond.toFixed(0)} msg/s (function nodes)`);
  console.log(`ratio loom / Node-RED: ${(loom.perSecond / red.perSecond).toFixed(2)}x (target >= 1.5x)`);
} finally {
  await stopNodeRed();
}
process.exit(0);
