// examples/graph-import.workflow.json (inlet → graph writer, `MERGE (p:Person {id: $id}) SET p.name = $name`, batches
// as the example sets them) on the embedded graph (PGlite with Apache AGE in its worker thread, as the executor starts
// it), in memory mode, in a WorkflowRun of this process (issue 51, Must 6): BENCH_RECORDS records (default 100,000)
// published one after the other, nodes per second for the first and the last 10,000 (how much a larger graph slows
// each MERGE: flat within 1.5×), against a plain SQL insert of the same rows into a table with a primary key on the
// same PostgreSQL in the same run, in statements of the same size (`INSERT … SELECT FROM unnest(…)`, one a batch). Then
// the publish-to-graph latency: one message at a time, from its publish until a query finds its node (p50, p99).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import pg from 'pg';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS, readWorkflowText } from '@loom/domain';
import { componentFactories, GraphStores, WorkflowRun } from '@loom/executor';
import { createLogger } from '@loom/telemetry';
import { quantile } from './loom-serve.mjs';

const RECORDS = Number(process.env.BENCH_RECORDS ?? 100_000);
const SLICE = 10_000;
const LATENCY_MESSAGES = Number(process.env.BENCH_LATENCY ?? 200);
const LATENCY_WARMUP = 10;
/** The targets: the last slice at least 1/1.5 of the first's rate, loom at least 0.3× the plain insert. */
const FLAT_TARGET = 1.5;
const SQL_TARGET = 0.3;

const here = dirname(fileURLToPath(import.meta.url));
const { workflow } = readWorkflowText(readFileSync(join(here, '../examples/graph-import.workflow.json'), 'utf8'), 'graph-import.workflow.json');
const writerInstance = workflow.components.find((component) => component.component.qualifiedName === COMPONENT_KINDS.GRAPH_DATABASE_WRITER);
const option = (name) => writerInstance.options.find((entry) => entry.name === name)?.value;
const BATCH = Number(option('batch_size'));
const inlet = workflow.components.find((component) => component.component.qualifiedName === COMPONENT_KINDS.INLET).name;

/** The body of record `index`, as a user's import would send it. */
const record = (index) => ({ id: `person-${index}`, name: `Person ${index}` });

const rate = (count, ms) => Math.round((count * 1000) / ms);
const fmt = (value) => Math.round(value).toLocaleString('en');

/** Wraps the writer's factory: every settled message counted, and the time each SLICE-th one settled. */
function countingWriter(factory, progress) {
  return {
    kind: factory.kind,
    async create(context) {
      const processor = await factory.create(context);
      return {
        batching: processor.batching,
        async process(batch, signal) {
          const outcomes = await processor.process(batch, signal);
          progress.statements++;
          progress.failed += outcomes.filter((result) => !result.ok).length;
          for (let index = 0; index < batch.length; index++) {
            progress.settled++;
            if (progress.settled % SLICE === 0) progress.marks.push(performance.now());
          }
          progress.waiter?.();
          return outcomes;
        },
        close: () => processor.close(),
      };
    },
  };
}

/** Nodes per second of each SLICE, from the start and the marks. */
const sliceRates = (started, marks) => marks.map((mark, index) => rate(SLICE, mark - (index === 0 ? started : marks[index - 1])));

/** Plain SQL: the same rows into a table with a primary key, in statements of BATCH rows, on the same server. */
async function plainInsert(address) {
  const client = new pg.Client({ host: address.host, port: address.port, user: 'postgres', database: 'postgres' });
  await client.connect();
  try {
    await client.query('DROP TABLE IF EXISTS public.bench_people; CREATE TABLE public.bench_people (id text PRIMARY KEY, name text NOT NULL)');
    const text = 'INSERT INTO public.bench_people (id, name) SELECT * FROM unnest($1::text[], $2::text[])';
    const marks = [];
    const started = performance.now();
    for (let start = 0; start < RECORDS; start += BATCH) {
      const rows = [];
      for (let index = start; index < Math.min(start + BATCH, RECORDS); index++) rows.push(record(index));
      await client.query({ text, values: [rows.map((row) => row.id), rows.map((row) => row.name)] });
      const done = Math.min(start + BATCH, RECORDS);
      if (Math.floor(done / SLICE) > marks.length) marks.push(performance.now());
    }
    const ms = performance.now() - started;
    const { rows } = await client.query('SELECT count(*)::int AS n FROM public.bench_people');
    await client.query('DROP TABLE public.bench_people');
    return { ms, perSecond: rate(RECORDS, ms), slices: sliceRates(started, marks), stored: rows[0].n };
  } finally {
    await client.end();
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'loom-graph-import-bench-'));
const config = loadConfig({ env: {}, overrides: [`loom.embedded.graph.dataDir=${dataDir}`] });
const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });
const graphStores = new GraphStores(config, logger);
const progress = { settled: 0, failed: 0, statements: 0, marks: [], waiter: undefined };
const factories = new Map(componentFactories(config, { graphStores }));
factories.set(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, countingWriter(factories.get(COMPONENT_KINDS.GRAPH_DATABASE_WRITER), progress));
const settledAt = (count) =>
  new Promise((resolve) => {
    progress.waiter = () => {
      if (progress.settled >= count) resolve();
    };
    progress.waiter();
  });

console.log(
  `examples/graph-import.workflow.json on the embedded graph, in memory: ${fmt(RECORDS)} records, batch_size ${BATCH}, aggregation_timeout ${option('aggregation_timeout')} ms`,
);
const run = await WorkflowRun.start(workflow, { factories, logger });
const withdrawal = new AbortController();
let loom;
let sql;
let latencies;
let stored;
try {
  const started = performance.now();
  for (let index = 0; index < RECORDS; index++) await run.publish(inlet, { id: `r-${index}`, body: record(index), headers: {} }, withdrawal);
  await settledAt(RECORDS);
  const ms = performance.now() - started;
  loom = { ms, perSecond: rate(RECORDS, ms), slices: sliceRates(started, progress.marks), statements: progress.statements, failed: progress.failed };

  const store = await graphStores.open(writerInstance.resource);
  try {
    stored = Number((await store.run('MATCH (p:Person) RETURN count(p) AS n'))[0]?.n);
    // the same PostgreSQL, right after: the plain insert writes into the database the graph grew in
    const status = await graphStores.embeddedGraphStatus();
    const [host, port] = status.address.split(':');
    sql = await plainInsert({ host, port: Number(port) });

    latencies = [];
    for (let index = 0; index < LATENCY_WARMUP + LATENCY_MESSAGES; index++) {
      const body = { id: `latency-${index}`, name: `Latency ${index}` };
      const began = performance.now();
      await run.publish(inlet, { id: body.id, body, headers: {} }, withdrawal);
      // polled back to back: the node's arrival is seen within one query's round trip
      while ((await store.run('MATCH (p:Person {id: $id}) RETURN p.id AS id', { id: body.id })).length === 0);
      if (index >= LATENCY_WARMUP) latencies.push(performance.now() - began);
    }
  } finally {
    await store.close();
  }
} finally {
  await run.stop(10_000);
  await graphStores.close();
  rmSync(dataDir, { recursive: true, force: true });
}

const first = loom.slices[0];
const last = loom.slices.at(-1);
const sqlFirst = sql.slices[0];
const sqlLast = sql.slices.at(-1);
console.log(`\nside | records | s | nodes/s overall | first ${fmt(SLICE)} | last ${fmt(SLICE)} | first / last | statements`);
console.log(
  `loom (inlet → MERGE writer) | ${fmt(RECORDS)} | ${(loom.ms / 1000).toFixed(1)} | ${fmt(loom.perSecond)} | ${fmt(first)} | ${fmt(last)} | ${(first / last).toFixed(2)}x | ${fmt(loom.statements)}`,
);
console.log(
  `plain SQL insert (primary key, ${BATCH} rows a statement) | ${fmt(RECORDS)} | ${(sql.ms / 1000).toFixed(1)} | ${fmt(sql.perSecond)} | ${fmt(sqlFirst)} | ${fmt(sqlLast)} | ${(sqlFirst / sqlLast).toFixed(2)}x | ${fmt(Math.ceil(RECORDS / BATCH))}`,
);
console.log(`loom nodes/s per ${fmt(SLICE)}: ${loom.slices.map(fmt).join(' / ')}`);
console.log(`nodes read back: ${fmt(stored)} (expected ${fmt(RECORDS)}); failed messages: ${loom.failed}; rows inserted by SQL: ${fmt(sql.stored)}`);
const flat = first / last;
const share = loom.perSecond / sql.perSecond;
console.log(`first / last ${fmt(SLICE)}: ${flat.toFixed(2)}x (target ≤ ${FLAT_TARGET}x: ${flat <= FLAT_TARGET ? 'met' : 'NOT met'})`);
console.log(`loom / plain SQL insert: ${share.toFixed(2)}x (target ≥ ${SQL_TARGET}x: ${share >= SQL_TARGET ? 'met' : 'NOT met'})`);
console.log(
  `publish-to-graph latency (${LATENCY_MESSAGES} messages one at a time, in memory, into a graph of ${fmt(RECORDS)} nodes): p50 ${quantile(latencies, 0.5).toFixed(2)} ms, p99 ${quantile(latencies, 0.99).toFixed(2)} ms`,
);
process.exit(0);
