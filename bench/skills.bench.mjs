// The skill gateway's cost and the entity extraction component's throughput, in one run:
// 1. Latency: a loopback echo skill called directly with node-fetch (keep-alive agent) and through the gateway's
//    InvokeSkill (gRPC to this process, registry lookup, breaker, cap, node-fetch, JSON both ways), sequentially,
//    alternating which goes first, ROUNDS times; the added latency is the gateway's p50/p99 less the direct ones
//    (medians over the rounds). Target (from the issue): at most 1 ms added at p50.
// 2. Throughput: messages/s through inlet → entity extraction → counting sink (a WorkflowRun in this process, the
//    component sending each batch in one InvokeSkillBatch) against a skill that answers a two-sentence annotation
//    after SKILL_WORK_MS, with the skill's concurrency cap at 1, 16 and 64.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import fetch from 'node-fetch';
import { loadConfig } from '@loom/config';
import { SkillCapability, SkillGatewayClient } from '@loom/contracts';
import { COMPONENT_KINDS, componentInstance as instance } from '@loom/domain';
import { componentFactories, WorkflowRun } from '@loom/executor';
import { call, createClient } from '@loom/service-kit';
import { serveForTest, startFakeSkill } from '@loom/service-kit/testing';
import { skillGatewayModule } from '@loom/skill-gateway';
import { createLogger } from '@loom/telemetry';
import { countingSink } from './counting-sink.mjs';

const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 4000);
const SKILL_WORK_MS = Number(process.env.BENCH_SKILL_WORK_MS ?? 2);
const CAPS = [1, 16, 64];
const annotation = JSON.parse(readFileSync(new URL('../libs/domain/test/fixtures/ewt-dev.annotation.json', import.meta.url), 'utf8')).annotation;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const ms = (value) => value.toFixed(3);

const root = mkdtempSync(join(tmpdir(), 'loom-bench-skills-'));
const logger = createLogger({ level: 'silent' });
const echo = await startFakeSkill(async (request) => {
  // only the throughput skills work; the echo skill answers at once whichever way it is called
  if (request.path === '/annotate' && SKILL_WORK_MS > 0) await sleep(SKILL_WORK_MS);
  return request.path.endsWith('/annotate') ? { status: 200, body: annotation } : { status: 200, body: { echo: true } };
});
const overrides = [
  `loom.embedded.postgres.dataDir=${join(root, 'pgdata')}`,
  'loom.skills.registry.cacheMs=60000',
  ...CAPS.map((cap) => `loom.skills.concurrency.annotate-${cap}=${cap}`),
];
const running = await serveForTest([skillGatewayModule], overrides, { logger });
const address = `127.0.0.1:${running.port}`;
const client = createClient(SkillGatewayClient, address, { retry: false });
const entity = (name, url) => ({
  skill: { name, url, capability: SkillCapability.SKILL_CAPABILITY_ENTITY_EXTRACTION, pipeline: 'default', version: '' },
  replace: true,
});
await call(client, 'registerSkill', entity('echo', `${echo.origin}/echo/annotate`));
for (const cap of CAPS) await call(client, 'registerSkill', entity(`annotate-${cap}`, `${echo.origin}/annotate`));

// 1. added latency
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const input = { text: 'Ben Goodger is the lead engineer for Mozilla Firefox.', pipeline: 'default' };
const direct = async () => {
  const started = performance.now();
  const response = await fetch(`${echo.origin}/echo/annotate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(input),
    agent,
  });
  await response.json();
  return performance.now() - started;
};
const gateway = async () => {
  const started = performance.now();
  await call(client, 'invokeSkill', { skillName: 'echo', input });
  return performance.now() - started;
};
const series = async (fn) => {
  const times = [];
  for (let i = 0; i < CALLS; i++) times.push(await fn());
  return times;
};
await series(direct);
await series(gateway); // warm-up: JIT, connections, the registry cache
const rounds = [];
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? [direct, gateway] : [gateway, direct];
  const results = new Map();
  for (const fn of order) results.set(fn, await series(fn));
  const d = results.get(direct);
  const g = results.get(gateway);
  rounds.push({ directP50: percentile(d, 50), directP99: percentile(d, 99), gatewayP50: percentile(g, 50), gatewayP99: percentile(g, 99) });
}
const pick = (key) => median(rounds.map((round) => round[key]));
console.log(
  `latency over ${CALLS} sequential calls, median of ${ROUNDS} rounds (each round's own figures: ${rounds.map((r) => `${ms(r.directP50)}/${ms(r.gatewayP50)}`).join(', ')} ms p50 direct/gateway)`,
);
console.log(`  direct node-fetch:     p50 ${ms(pick('directP50'))} ms  p99 ${ms(pick('directP99'))} ms`);
console.log(`  through the gateway:   p50 ${ms(pick('gatewayP50'))} ms  p99 ${ms(pick('gatewayP99'))} ms`);
console.log(
  `  added by the gateway:  p50 ${ms(pick('gatewayP50') - pick('directP50'))} ms  p99 ${ms(pick('gatewayP99') - pick('directP99'))} ms  (target: at most 1 ms at p50)`,
);

// 2. throughput through an entity extraction component
const config = loadConfig({ env: {}, overrides: ['loom.telemetry.prometheus.port=0'] });
for (const cap of CAPS) {
  const figures = [];
  for (let round = 0; round < ROUNDS; round++) {
    const sink = countingSink();
    const factories = new Map(componentFactories(config, { skillGateway: () => client }));
    factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
    const skillComponent = { ...instance(COMPONENT_KINDS.ENTITY_EXTRACTION, 'entities', { concurrency: 4 }), skill: { name: `annotate-${cap}`, url: '' } };
    const workflow = {
      name: `Skills bench_${cap}`,
      autoStart: false,
      components: [instance(COMPONENT_KINDS.INLET, 'in'), skillComponent, instance(COMPONENT_KINDS.LOGGER, 'sink')],
      links: [
        { from: 'in', to: 'entities' },
        { from: 'entities', to: 'sink' },
      ],
      resources: [],
      skills: [],
      workflowResources: [],
    };
    const run = await WorkflowRun.start(workflow, { factories, logger });
    const withdrawal = new AbortController();
    const feed = async (count, offset) => {
      const arrived = sink.expect(count);
      for (let n = offset; n < offset + count; n++)
        await run.publish(
          'in',
          { id: String(n), body: { text: `message ${n}: Ben Goodger is the lead engineer for Mozilla Firefox.` }, headers: {} },
          withdrawal,
        );
      await arrived;
    };
    await feed(400, 0);
    const started = performance.now();
    await feed(MESSAGES, 400);
    figures.push(MESSAGES / ((performance.now() - started) / 1000));
    const failed = run.counters().reduce((sum, counters) => sum + counters.messagesFailed, 0);
    await run.stop(10_000);
    if (failed > 0) throw new Error(`${failed} messages failed at cap ${cap}`);
  }
  console.log(
    `entity extraction component, skill cap ${String(cap).padStart(2)}: ${Math.round(median(figures))} messages/s (median of ${ROUNDS}: ${figures.map((f) => Math.round(f)).join(', ')}; the skill takes ${SKILL_WORK_MS} ms a call)`,
  );
}

client.close();
await running.stop();
await echo.close();
agent.destroy();
rmSync(root, { recursive: true, force: true });
