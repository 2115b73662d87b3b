// Loom's side of the graph-writer benchmarks (graph.bench.mjs on AGE, graph-neo4j.bench.mjs on Neo4j): inlet →
// GraphDatabaseWriter with batch_writes → counting sink, in a WorkflowRun, timed from its first publish to the sink
// counting the last node (failures count too, so a failing run ends and says so). The node count is read back.
import { Writable } from 'node:stream';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS, componentInstance as instance } from '@loom/domain';
import { componentFactories, GraphStores, outcome, WorkflowRun } from '@loom/executor';
import { createLogger } from '@loom/telemetry';

/** The writer's statement: what it sends in batch mode is `UNWIND $batch AS row CREATE …` (toBatchQuery). */
export const QUERY = 'CREATE (n:Item {id: $id, name: $name, score: $score})';
/** The same batch statement written out, for the raw loops. */
export const RAW_CYPHER = 'UNWIND $batch AS row CREATE (n:Item {id: row.id, name: row.name, score: row.score})';
export const COUNT_CYPHER = 'MATCH (n:Item) RETURN count(n) AS nodes';

/** The properties of node `index`. */
export const node = (index) => ({ id: index, name: `item ${index}`, score: (index % 1000) / 10 });

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
export const rate = (perSecond) => `${perSecond.toFixed(0)} nodes/s`;

/**
 * Runs loom's side and the raw side `rounds` times each, one after the other and never at once, alternating which goes first;
 * `before` runs ahead of every measurement (to empty the database) and `report` after each round. Answers both sides' results in
 * round order.
 */
export async function alternatingRounds(rounds, sides, { before = async () => {}, report }) {
  const looms = [];
  const raws = [];
  for (let round = 1; round <= rounds; round++) {
    const loomFirst = round % 2 === 1;
    const results = {};
    for (const side of loomFirst ? ['loom', 'raw'] : ['raw', 'loom']) {
      await before();
      results[side] = await sides[side]();
    }
    looms.push(results.loom);
    raws.push(results.raw);
    report(round, loomFirst, results);
  }
  return { looms, raws };
}

/** Wraps a factory's processors to count the batches they get (the writer's batches are its statements). */
function countingBatches(factory, batches) {
  return {
    kind: factory.kind,
    async create(context) {
      const processor = await factory.create(context);
      return {
        batching: processor.batching,
        process(batch, signal) {
          batches.calls++;
          batches.messages += batch.length;
          return processor.process(batch, signal);
        },
        close: () => processor.close(),
      };
    },
  };
}

/** inlet → graph writer (batch_writes, `batchSize`) into `resource` → the counting sink (a Logger's place). */
function benchWorkflow(resource, batchSize) {
  const writer = {
    ...instance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, 'writer', { query: QUERY, batch_writes: true, batch_size: batchSize, aggregation_timeout: 50 }),
    resource,
  };
  return {
    name: 'graph-bench',
    autoStart: false,
    components: [instance(COMPONENT_KINDS.INLET, 'in'), writer, instance(COMPONENT_KINDS.LOGGER, 'sink')],
    links: [
      { from: 'in', to: 'writer' },
      { from: 'writer', to: 'sink' },
    ],
    resources: [],
    skills: [],
    workflowResources: [],
  };
}

/** Writes `warmup` then `nodes` nodes through loom's graph writer into `resource`; times the second part. */
export async function measureLoom(resource, { batchSize, warmup, nodes }) {
  const sink = { count: 0, failed: 0, target: Infinity, reached: undefined };
  const arrive = () => {
    if (sink.count + sink.failed >= sink.target) sink.reached?.();
  };
  const countingSink = {
    kind: 'processor',
    create: () =>
      Promise.resolve({
        process(batch) {
          sink.count += batch.length;
          arrive();
          return Promise.resolve(batch.map(() => outcome.none()));
        },
        close: () => Promise.resolve(),
      }),
  };
  const config = loadConfig({ env: {} });
  const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });
  const graphStores = new GraphStores(config, logger);
  const factories = new Map(componentFactories(config, { graphStores }));
  const batches = { calls: 0, messages: 0 };
  factories.set(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, countingBatches(factories.get(COMPONENT_KINDS.GRAPH_DATABASE_WRITER), batches));
  factories.set(COMPONENT_KINDS.LOGGER, countingSink);
  const workflow = benchWorkflow(resource, batchSize);
  const onFailure = () => {
    sink.failed++;
    arrive();
  };
  const run = await WorkflowRun.start(workflow, { factories, logger, onFailure });
  const withdrawal = new AbortController();
  // the writer's input queue (1024 messages) keeps publishing ahead of it, so batches fill
  const feed = async (count, offset) => {
    const arrived = new Promise((resolve) => (sink.reached = resolve));
    sink.count = 0;
    sink.failed = 0;
    sink.target = count;
    for (let index = offset; index < offset + count; index++) await run.publish('in', { id: String(index), body: node(index), headers: {} }, withdrawal);
    await arrived;
  };
  let seconds;
  let failed;
  try {
    await feed(warmup, 0);
    batches.calls = 0;
    batches.messages = 0;
    const started = performance.now();
    await feed(nodes, warmup);
    seconds = (performance.now() - started) / 1000;
  } finally {
    failed = run.counters().reduce((sum, counters) => sum + counters.messagesFailed, 0);
    await run.stop(10_000);
  }
  if (failed > 0) {
    await graphStores.close();
    throw new Error(
      `${failed} messages failed in loom's graph writer (last error: ${run.counters().find((counters) => counters.lastError !== '')?.lastError})`,
    );
  }
  // read back through a store of the same resource
  const store = await graphStores.open(resource);
  let stored;
  try {
    stored = Number((await store.run(COUNT_CYPHER))[0]?.nodes);
  } finally {
    await store.close();
    await graphStores.close();
  }
  return { seconds, perSecond: nodes / seconds, stored, statements: batches.calls, meanBatch: batches.messages / batches.calls };
}
