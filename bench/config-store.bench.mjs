// Pushes per second and p50/p99 push latency of the config store (validate, seal over gRPC, two files written with
// fsync), for a typical 20-component workflow, against a baseline measured in the same run: the same two files
// written durably with writeFilesAtomic alone, no gRPC, no sealing.
import { scratchDir } from './scratch.mjs';
import { join } from 'node:path';
import { SecretsClient, WorkflowStoreClient } from '@loom/contracts';
import {
  collectSecretSlots,
  COMPONENT_KINDS,
  componentInstance as component,
  needsSealing,
  findResourceDefinition,
  RESOURCE_KINDS,
  serializeWorkflowJson,
} from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { writeFilesAtomic } from '@loom/foundation';
import { call, createClient } from '@loom/service-kit';
import { serveForTest } from '@loom/service-kit/testing';
import { auditModule } from '@loom/audit';
import { configStoreModule } from '@loom/config-store';
import { secretsModule } from '@loom/secrets';

const SEQUENTIAL = 500;
const CONCURRENT_WORKFLOWS = 8;
const CONCURRENT_ROUNDS = 60;

/** inlet → 8 × (JavaScript transformer → filter) → graph database writer → logger, a logger as failure handler: 20 components. */
function typicalWorkflow(name) {
  const id = (index) => `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`;
  const script = Array.from({ length: 12 }, (_, line) => `  body.field${line} = String(body.field${line} ?? '').trim().toLowerCase();`).join('\n');
  const components = [component(COMPONENT_KINDS.INLET, `Inlet_${id(0)}`, {})];
  const errors = `Errors_${id(18)}`;
  for (let stage = 0; stage < 8; stage++) {
    components.push(
      component(COMPONENT_KINDS.MESSAGE_TRANSFORMER, `Clean ${stage}_${id(1 + stage * 2)}`, { language: 'javascript', script: `${script}\nreturn body;` }),
    );
    components.push(
      component(COMPONENT_KINDS.MESSAGE_FILTER, `Keep ${stage}_${id(2 + stage * 2)}`, { language: 'javascript', script: 'return body.field0 !== "";' }),
    );
  }
  components.push(component(COMPONENT_KINDS.LOGGER, errors, {}));
  const writer = component(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, `Writer_${id(19)}`, {
    query: 'MERGE (a:Article {id: $id}) SET a.title = $title, a.text = $text',
    stream_records: false,
    batch_writes: true,
    store_error_content: true,
    store_message_content: true,
    failure_handler: errors,
  });
  writer.resource = {
    name: `Knowledge graph_${id(20)}`,
    resource: findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE),
    parameters: { host: 'neo4j.internal', port: 7687, user: 'loom', password: '$$NEO4J_PASSWORD', database: 'neo4j', read_only: false },
  };
  components.push(writer);
  // the logger last: a push refuses a link out of a sink
  components.push(component(COMPONENT_KINDS.LOGGER, `Log_${id(17)}`, {}));
  const chain = components.filter((c) => c.name !== errors);
  const links = chain.slice(1).map((to, index) => ({ from: chain[index].name, to: to.name }));
  return { name, autoStart: false, components, links, resources: [], skills: [], workflowResources: [] };
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summarise(label, latencies, elapsedMs, operations) {
  const sorted = [...latencies].sort((a, b) => a - b);
  const figures = { p50: percentile(sorted, 50), p99: percentile(sorted, 99), perSecond: (operations / elapsedMs) * 1000 };
  console.log(`${label.padEnd(44)} ${figures.perSecond.toFixed(0).padStart(6)}/s   p50 ${figures.p50.toFixed(2)} ms   p99 ${figures.p99.toFixed(2)} ms`);
  return figures;
}

async function timed(count, operation) {
  const latencies = [];
  const started = performance.now();
  for (let index = 0; index < count; index++) {
    const start = performance.now();
    await operation(index);
    latencies.push(performance.now() - start);
  }
  return { latencies, elapsed: performance.now() - started };
}

const root = scratchDir('loom-bench-config-store-');
const CONFIG_STORE_TOKEN = 'bench-config-store-token-0123456789';
const running = await serveForTest(
  [secretsModule, auditModule, configStoreModule],
  [
    `loom.auth.tokens.config-store=${CONFIG_STORE_TOKEN}`,
    `loom.security.audit.log.path=${join(root, 'audit.log')}`,
    `loom.datasource.filesystemRoot=${join(root, 'workflows')}`,
    `loom.embedded.postgres.dataDir=${join(root, 'pgdata')}`,
    `loom.secrets.keyRingFile=${join(root, 'keyring.json')}`,
  ],
);
const address = `127.0.0.1:${running.port}`;
const store = createClient(WorkflowStoreClient, address);
const secrets = createClient(SecretsClient, address);
// sealing is the config store's alone (the permission table): the baseline call presents its token
const sealer = createClient(SecretsClient, address, { token: CONFIG_STORE_TOKEN });
await call(secrets, 'createVariable', { key: 'NEO4J_PASSWORD', value: 'bench-password', encrypted: true, userUuid: '' });

const workflow = typicalWorkflow('Typical workflow_11111111-2222-4333-8444-555555555555');
const text = serializeWorkflowJson(workflow);
console.log(`workflow: ${workflow.components.length} components, ${Buffer.byteLength(text)} bytes as .workflow.json; fsync on every push`);
const push = (configuration) => call(store, 'putWorkflow', { workflow: workflowToProto(configuration) });
for (let index = 0; index < 20; index++) await push(workflow); // warm-up

const baselineDir = join(root, 'baseline');
const baseline = await timed(SEQUENTIAL, () =>
  writeFilesAtomic([
    { path: join(baselineDir, 'w.workflow.json'), data: text },
    { path: join(baselineDir, 'w.json'), data: '{"version":1}' },
  ]),
);
const base = summarise('baseline: the two files, writeFilesAtomic', baseline.latencies, baseline.elapsed, SEQUENTIAL);
const { slots } = collectSecretSlots(structuredClone(workflow), needsSealing);
const seal = await timed(SEQUENTIAL, () => call(sealer, 'sealConfiguration', { workflow: undefined, slots, workflowName: workflow.name }));
summarise('SealConfiguration alone (gRPC, loopback)', seal.latencies, seal.elapsed, SEQUENTIAL);
const sequential = await timed(SEQUENTIAL, () => push(workflow));
const pushes = summarise('PutWorkflow, one client, one workflow', sequential.latencies, sequential.elapsed, SEQUENTIAL);

// an identical push writes nothing (issue 49): a new version each time writes the workflow's two files and, since
// issue 53, the kept version's two, against the same four files written with writeFilesAtomic alone
const historyDir = join(root, 'baseline-history');
const fourFiles = await timed(SEQUENTIAL, async () => {
  await writeFilesAtomic([
    { path: join(historyDir, 'w', '1.workflow.json'), data: text },
    { path: join(historyDir, 'w', '1.json'), data: '{"version":1}' },
  ]);
  await writeFilesAtomic([
    { path: join(baselineDir, 'w.workflow.json'), data: text },
    { path: join(baselineDir, 'w.json'), data: '{"version":1}' },
  ]);
});
const fourBase = summarise('baseline: four files (two pairs), writeFilesAtomic', fourFiles.latencies, fourFiles.elapsed, SEQUENTIAL);
const versioned = await timed(SEQUENTIAL, (index) => {
  const changed = structuredClone(workflow);
  changed.components.at(-2).options.find((option) => option.name === 'query').value = `MERGE (a:Article {id: $id}) SET a.n = ${index}`;
  return push(changed);
});
const newVersions = summarise('PutWorkflow, a new version each push', versioned.latencies, versioned.elapsed, SEQUENTIAL);
console.log(`ratio new version / four files: p50 ${(newVersions.p50 / fourBase.p50).toFixed(2)}x, p99 ${(newVersions.p99 / fourBase.p99).toFixed(2)}x`);

const names = Array.from({ length: CONCURRENT_WORKFLOWS }, (_, index) => `Parallel ${index}_${String(index).padStart(8, '0')}-2222-4333-8444-555555555555`);
const concurrentLatencies = [];
const concurrentStart = performance.now();
await Promise.all(
  names.map(async (name) => {
    const configuration = typicalWorkflow(name);
    for (let round = 0; round < CONCURRENT_ROUNDS; round++) {
      const start = performance.now();
      await push(configuration);
      concurrentLatencies.push(performance.now() - start);
    }
  }),
);
summarise(
  `PutWorkflow, ${CONCURRENT_WORKFLOWS} workflows pushed concurrently`,
  concurrentLatencies,
  performance.now() - concurrentStart,
  CONCURRENT_WORKFLOWS * CONCURRENT_ROUNDS,
);
console.log(`ratio PutWorkflow / baseline: p50 ${(pushes.p50 / base.p50).toFixed(2)}x, p99 ${(pushes.p99 / base.p99).toFixed(2)}x (target p99 <= 10 ms)`);

store.close();
secrets.close();
sealer.close();
await running.stop();
