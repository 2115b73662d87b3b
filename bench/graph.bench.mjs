// Nodes per second written by loom's graph database writer (inlet → GraphDatabaseWriter with batch_writes → counting
// sink, in a WorkflowRun) into the embedded graph (PGlite with Apache AGE served on loopback, in this process), against
// a raw `pg` loop sending the same UNWIND batches through the same ag_catalog.cypher() SQL, sequentially, in the same
// run. PGlite has one session, so the two sides take turns (never at once), alternating which goes first, ROUNDS times
// each; the medians are compared. The server is warmed up before anything is measured, and each side writes a warm-up
// batch to its own graph (connection, extension, create_graph) before each timed part. Loom's figure runs from its
// first publish to the sink counting the last node; the raw one from its first batch to its last answer.
// Target (from the issue): loom within 3x of the raw loop. The node counts are read back at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { findResourceDefinition, RESOURCE_KINDS } from '@loom/domain';
import { startEmbeddedGraph, toBatchQuery } from '@loom/graph';
import { alternatingRounds, COUNT_CYPHER, measureLoom as measureWriter, median, node, QUERY, rate, RAW_CYPHER } from './graph-writer-run.mjs';

const NODES = Number(process.env.BENCH_NODES ?? 20_000);
const BATCH_SIZES = process.env.BENCH_BATCH === undefined ? [20, 200] : [Number(process.env.BENCH_BATCH)];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = 1_000;
// PGlite's WebAssembly takes about a thousand statements to reach its steady speed: whichever side ran first would pay
// for that, so the server is warmed up with raw batches on a graph of its own before anything is measured
const SERVER_WARMUP = 30_000;

/** The SQL age-statement.ts builds for a Cypher statement without RETURN: one declared column, the parameters in $1. */
const cypherSql = (graph, cypher, columns = 'result ag_catalog.agtype') => `SELECT * FROM ag_catalog.cypher('${graph}', $$ ${cypher} $$, $1) AS (${columns})`;

function measureLoom(server, batchSize) {
  const resource = {
    name: 'graph_1',
    resource: findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE),
    parameters: { host: server.host, port: server.port, user: 'postgres', graph: `bench_graph_${batchSize}` },
  };
  return measureWriter(resource, { batchSize, warmup: WARMUP, nodes: NODES });
}

async function measureRaw(server, graph, batchSize, warmup, nodes) {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    // the set-up age-store.ts does on a new connection (the extension is there already when loom ran first)
    await client.query('CREATE EXTENSION IF NOT EXISTS age');
    await client.query("LOAD 'age'").catch(() => undefined);
    await client.query('SET search_path = ag_catalog, "$user", public');
    const exists = await client.query({ text: 'SELECT 1 FROM ag_catalog.ag_graph WHERE name = $1', values: [graph] });
    if (exists.rowCount !== 1) await client.query({ text: 'SELECT ag_catalog.create_graph($1::name)', values: [graph] });
    const text = cypherSql(graph, RAW_CYPHER);
    const write = async (count, offset) => {
      for (let start = offset; start < offset + count; start += batchSize) {
        const rows = [];
        for (let index = start; index < Math.min(start + batchSize, offset + count); index++) rows.push(node(index));
        await client.query({ text, values: [JSON.stringify({ batch: rows })], rowMode: 'array' });
      }
    };
    await write(warmup, 0);
    const started = performance.now();
    await write(nodes, warmup);
    const seconds = (performance.now() - started) / 1000;
    const counted = await client.query({ text: cypherSql(graph, COUNT_CYPHER, 'nodes ag_catalog.agtype'), values: ['{}'], rowMode: 'array' });
    return { seconds, perSecond: nodes / seconds, stored: Number(counted.rows[0]?.[0]), statements: Math.ceil(nodes / batchSize) };
  } finally {
    await client.end();
  }
}

if (toBatchQuery(QUERY, 'batch', 'row') !== RAW_CYPHER) {
  console.error(`the writer's batch statement is now '${toBatchQuery(QUERY, 'batch', 'row')}', not the raw loop's '${RAW_CYPHER}': update the baseline`);
  process.exit(1);
}

const dataDir = mkdtempSync(join(tmpdir(), 'loom-graph-bench-'));
const server = await startEmbeddedGraph({ dataDir, port: 0 });
console.log(
  `embedded graph (PGlite + AGE) on ${server.host}:${server.port}; ${NODES} nodes per measurement after ${WARMUP} warm-up nodes, ${ROUNDS} rounds per side`,
);
console.log(`statement: ${cypherSql('<graph>', RAW_CYPHER)}`);
try {
  const warm = await measureRaw(server, 'bench_warmup', 20, 0, SERVER_WARMUP);
  console.log(`server warm-up: ${SERVER_WARMUP} nodes in batches of 20 through raw pg in ${warm.seconds.toFixed(2)} s (not counted)`);
  for (const batchSize of BATCH_SIZES) {
    console.log(`\nbatch_size ${batchSize}:`);
    // PGlite has one session: the two sides run one after the other, never at once; which goes first alternates
    const { looms, raws } = await alternatingRounds(
      ROUNDS,
      { loom: () => measureLoom(server, batchSize), raw: () => measureRaw(server, `bench_raw_${batchSize}`, batchSize, WARMUP, NODES) },
      {
        report: (round, loomFirst, { loom, raw }) =>
          console.log(
            `  round ${round} (${loomFirst ? 'loom' : 'raw'} first): loom ${NODES} nodes in ${loom.seconds.toFixed(2)} s = ${rate(loom.perSecond)}` +
              ` (${loom.statements} statements, ${loom.meanBatch.toFixed(1)} nodes each); raw pg ${raw.seconds.toFixed(2)} s = ${rate(raw.perSecond)} (${raw.statements} statements)`,
          ),
      },
    );
    const loom = median(looms.map((result) => result.perSecond));
    const raw = median(raws.map((result) => result.perSecond));
    console.log(`  loom graph writer: ${rate(loom)} (median)`);
    console.log(`  raw pg loop:       ${rate(raw)} (median)`);
    console.log(`  ratio raw pg / loom: ${(raw / loom).toFixed(2)}x (target: loom within 3x)`);
    const expected = ROUNDS * (WARMUP + NODES);
    console.log(`  nodes read back: loom graph ${looms.at(-1).stored}, raw graph ${raws.at(-1).stored} (expected ${expected} each)`);
  }
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(0);
