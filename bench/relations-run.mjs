// What the relations benchmark and the relations evaluation share: the example's rule set as its workflow file holds
// it, the two graph backends (the embedded PGlite+AGE graph and the tests' Neo4j), and a run of one relation
// component between an inlet and a sink.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS, componentInstance as instance, findResourceDefinition, readWorkflowText, RESOURCE_KINDS } from '@loom/domain';
import { componentFactories, GraphStores, WorkflowRun } from '@loom/executor';
import { createNeo4jStore, startEmbeddedGraph } from '@loom/graph';
import { startNeo4j } from '@loom/testing';
import { createLogger } from '@loom/telemetry';
import { countingSink } from './counting-sink.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** The relations example's workflow file. */
export const EXAMPLE_FILE = join(here, '..', 'examples', 'relations.workflow.yaml');

/**
 * The `rules` option of the example's Rule Based Relation Extraction, exactly as the file holds it when this runs
 * (read through the compact form's converter), so that whatever rule set the example ships is the one measured.
 */
export function exampleRulesOption() {
  const { workflow } = readWorkflowText(readFileSync(EXAMPLE_FILE, 'utf8'), EXAMPLE_FILE);
  const extraction = workflow.components.find((component) => component.component.qualifiedName === COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION);
  const rules = extraction?.options.find((option) => option.name === 'rules');
  if (rules === undefined) throw new Error(`${EXAMPLE_FILE} has no Rule Based Relation Extraction with a rules option`);
  return typeof rules.value === 'string' ? JSON.parse(rules.value) : rules.value;
}

const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });
const config = loadConfig({ env: {} });

/** The embedded AGE graph: one server, a graph per name. */
export async function ageBackend() {
  const dataDir = mkdtempSync(join(tmpdir(), 'loom-relations-bench-'));
  const server = await startEmbeddedGraph({ dataDir, port: 0 });
  return {
    name: 'AGE (embedded)',
    resource: (graph) => ({
      name: `graph ${graph}`,
      resource: findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE),
      parameters: { host: server.host, port: server.port, user: 'postgres', graph },
    }),
    fresh: () => Promise.resolve(),
    // the embedded graph (PGlite) runs in this process
    cpuSeconds: () => processCpuSeconds(),
    async close() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Neo4j Community: one database, emptied for each round. Needs LOOM_NEO4J_LAUNCHER (scripts/test-env/neo4j.mjs).
 * Its JVM runs with its own defaults, as a deployed server does (`BENCH_NEO4J_JVM=quick-start`: the tests' quick-start
 * tuning, which measures a slower server). A round deletes the data and keeps the indexes, and with them the server's
 * plans of the writers' statements (fixed texts, planned once on a deployed server); `BENCH_NEO4J_CLEAR=1` drops the
 * indexes too, as the bench did until issue 38, so that every round plans every statement again (about 0.4 s of the
 * JVM's CPU for the Token Occurrence Writer's three).
 */
export async function neo4jBackend() {
  const jvm = process.env.BENCH_NEO4J_JVM ?? 'throughput';
  const server = await startNeo4j({ maxHeap: '1g', jvm });
  const parameters = { host: server.uri, user: server.user, password: server.password };
  const store = createNeo4jStore({ url: server.uri, user: server.user, password: server.password, database: undefined, readOnly: false });
  return {
    name: `Neo4j 5.26 (JVM tuned for ${jvm})`,
    resource: (graph) => ({ name: `graph ${graph}`, resource: findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE), parameters }),
    fresh: () => (process.env.BENCH_NEO4J_CLEAR === '1' ? server.clear() : store.run('MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS')),
    cpuSeconds: () => processCpuSeconds() + serverCpuSeconds(server.pid),
    async close() {
      await store.close();
      await server.close();
    },
  };
}

/**
 * Runs inlet → component → sink over the messages; answers seconds from the first publish to the last arrival.
 * `observe` sees every message that reaches the sink. A failed message ends the run with its error.
 * `oneAtATime`: each message is published once the one before it has arrived, so every batch is one message (as when
 * documents come from an annotation service slower than the writer); otherwise all are published at once.
 */
export async function runComponent(component, messages, observe = undefined, { oneAtATime = false } = {}) {
  const graphStores = new GraphStores(config, logger);
  const factories = new Map(componentFactories(config, { graphStores }));
  const sink = countingSink(observe);
  factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
  const workflow = {
    name: 'relations-bench',
    autoStart: false,
    components: [instance(COMPONENT_KINDS.INLET, 'in'), { ...component, name: 'work' }, instance(COMPONENT_KINDS.LOGGER, 'sink')],
    links: [
      { from: 'in', to: 'work' },
      { from: 'work', to: 'sink' },
    ],
    resources: [],
    skills: [],
    workflowResources: [],
  };
  // a failed message never reaches the sink: it ends the measurement with its error
  let fail;
  const failed = new Promise((_resolve, reject) => (fail = reject));
  const onFailure = (failure, message) => fail(new Error(`message ${message.id} failed: ${failure.message}`, { cause: failure }));
  const run = await WorkflowRun.start(workflow, { factories, logger, onFailure });
  const arrived = oneAtATime ? undefined : sink.expect(messages.length);
  const withdrawal = new AbortController();
  const started = performance.now();
  try {
    const fed = (async () => {
      for (const message of messages) {
        const one = oneAtATime ? sink.expect(1) : undefined;
        await run.publish('in', message, withdrawal);
        await one;
      }
      await arrived;
    })();
    await Promise.race([fed, failed]);
  } finally {
    await run.stop(10_000);
    await graphStores.close();
  }
  return { seconds: (performance.now() - started) / 1000 };
}

/** Answers the single value of a counting statement on a backend's graph. */
export async function countIn(backend, graph, cypher) {
  const graphStores = new GraphStores(config, logger);
  const store = await graphStores.open(backend.resource(graph));
  try {
    return Number(Object.values((await store.run(cypher))[0] ?? {})[0]);
  } finally {
    await store.close();
    await graphStores.close();
  }
}

/** CPU seconds (user and system) this process has used so far. */
export function processCpuSeconds() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

const clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** CPU seconds (user and system, all its threads) another process has used so far, from /proc/<pid>/stat (Linux). */
function serverCpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/** The median of a list of numbers. */
export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
