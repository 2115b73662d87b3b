// Python script components against JavaScript ones and against Node-RED, on the executor
// benchmark's flow: inlet → transformer → filter → counting sink, half the messages filtered out.
// For each language: how long the component takes to start (Python: the script host process and
// its interpreter), the latency of the first message after start, and messages per second. Node-RED
// 4 runs the same flow with function nodes in this process (bench/node-red-baseline.mjs). Target:
// the Python flow at 0.5x Node-RED's or better.
import { Writable } from 'node:stream';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS } from '@loom/domain';
import { componentFactories, WorkflowRun } from '@loom/executor';
import { articleWorkflow } from './article-pipeline.mjs';
import { countingSink, measureThroughput } from './counting-sink.mjs';
import { createLogger } from '@loom/telemetry';
import { measureNodeRed, samplePayload, stopNodeRed } from './node-red-baseline.mjs';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 50_000);
const WARMUP = 2_000;
const SCRIPTS = {
  javascript: {
    transform: 'return { ...body, title: String(body.title).toUpperCase(), words: String(body.text).split(" ").length };',
    filter: 'return body.words > 3;',
  },
  python: {
    transform: "return {**body, 'title': str(body['title']).upper(), 'words': len(str(body['text']).split(' '))}",
    filter: "return body['words'] > 3",
  },
};
const NODE_RED_TRANSFORM =
  'msg.payload = { ...msg.payload, title: String(msg.payload.title).toUpperCase(), words: String(msg.payload.text).split(" ").length }; return msg;';
const NODE_RED_FILTER = 'return msg.payload.words > 3 ? msg : null;';

const sink = countingSink();

async function measure(language) {
  const config = loadConfig({ env: {}, overrides: ['loom.experimental.enabled=true'] });
  const factories = new Map(componentFactories(config));
  factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
  const { transform, filter } = SCRIPTS[language];
  const workflow = articleWorkflow(`bench ${language}`, { scripts: { transform, filter }, language });
  const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });
  const withdrawal = new AbortController();
  const starting = performance.now();
  const run = await WorkflowRun.start(workflow, { factories, logger });
  const startMs = performance.now() - starting;

  // the first message after start: a long article, so it passes the filter
  const first = sink.expect(1);
  const sent = performance.now();
  await run.publish('in', { id: 'first', body: { title: 'first', text: 'a long enough first article' }, headers: {} }, withdrawal);
  await first;
  const firstMs = performance.now() - sent;

  const { perSecond } = await measureThroughput(run, sink, { messages: MESSAGES, warmup: WARMUP, samplePayload, label: `the ${language} flow` });
  return { startMs, firstMs, perSecond };
}

const results = {};
for (const language of ['python', 'javascript']) {
  results[language] = await measure(language);
  const { startMs, firstMs, perSecond } = results[language];
  console.log(
    `${language}: start ${startMs.toFixed(0)} ms, first message ${firstMs.toFixed(1)} ms after start, ${perSecond.toFixed(0)} msg/s (${MESSAGES} messages)`,
  );
}
try {
  const red = await measureNodeRed({ transformCode: NODE_RED_TRANSFORM, filterCode: NODE_RED_FILTER, messages: MESSAGES, expectedAtSink: MESSAGES / 2 });
  console.log(`Node-RED ${red.version}: ${red.perSecond.toFixed(0)} msg/s (function nodes)`);
  console.log(`ratio Python / JavaScript: ${(results.python.perSecond / results.javascript.perSecond).toFixed(2)}x`);
  console.log(`ratio Python / Node-RED: ${(results.python.perSecond / red.perSecond).toFixed(2)}x (target >= 0.5x)`);
} finally {
  await stopNodeRed();
}
process.exit(0);
