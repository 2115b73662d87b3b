// Nodes per second written by loom's graph database writer into Neo4j 5 (the tests' launcher: Community Edition,
// embedded, Bolt on loopback, its own JVM), against a raw neo4j-driver loop sending the same UNWIND batches
// (`session.executeWrite` per batch, one after another) to the same server in the same run. The two sides take
// turns, alternating which goes first, ROUNDS times each, each on an emptied database; the medians are compared.
// Both sides write a warm-up before their timed part. Target (issue 32): loom / raw ≥ 0.9. Counts are read back.
// Needs LOOM_NEO4J_LAUNCHER: `export $(node scripts/test-env/neo4j.mjs)` builds the launcher once.
import neo4j from 'neo4j-driver';
import { findResourceDefinition, RESOURCE_KINDS } from '@loom/domain';
import { toBatchQuery } from '@loom/graph';
import { startNeo4j } from '@loom/testing';
import { alternatingRounds, COUNT_CYPHER, measureLoom, median, node, QUERY, rate, RAW_CYPHER } from './graph-writer-run.mjs';

const NODES = Number(process.env.BENCH_NODES ?? 20_000);
const BATCH_SIZES = process.env.BENCH_BATCH === undefined ? [20, 200] : [Number(process.env.BENCH_BATCH)];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = 1_000;
// the JVM compiles its hot paths during the first thousands of statements: whichever side ran first would pay for
// that, so the server is warmed up with raw batches before anything is measured
const SERVER_WARMUP = 20_000;

/** The same nodes as loom writes: whole numbers go to Neo4j as integers, as the writer sends them. */
const rawNode = (index) => {
  const { id, name, score } = node(index);
  return { id: neo4j.int(id), name, score };
};

async function measureRaw(server, { batchSize, warmup, nodes }) {
  const driver = neo4j.driver(server.uri, neo4j.auth.basic(server.user, server.password));
  const session = driver.session();
  try {
    const write = async (count, offset) => {
      for (let start = offset; start < offset + count; start += batchSize) {
        const batch = [];
        for (let index = start; index < Math.min(start + batchSize, offset + count); index++) batch.push(rawNode(index));
        await session.executeWrite((tx) => tx.run(RAW_CYPHER, { batch }));
      }
    };
    await write(warmup, 0);
    const started = performance.now();
    await write(nodes, warmup);
    const seconds = (performance.now() - started) / 1000;
    const counted = await session.executeRead((tx) => tx.run(COUNT_CYPHER));
    return { seconds, perSecond: nodes / seconds, stored: counted.records[0].get('nodes').toNumber(), statements: Math.ceil(nodes / batchSize) };
  } finally {
    await session.close();
    await driver.close();
  }
}

if (toBatchQuery(QUERY, 'batch', 'row') !== RAW_CYPHER) {
  console.error(`the writer's batch statement is now '${toBatchQuery(QUERY, 'batch', 'row')}', not the raw loop's '${RAW_CYPHER}': update the baseline`);
  process.exit(1);
}

const server = await startNeo4j({ maxHeap: '1g' });
const resource = {
  name: 'graph_1',
  resource: findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE),
  parameters: { host: server.uri, user: server.user, password: server.password },
};
console.log(`Neo4j (tests' launcher) at ${server.uri}; ${NODES} nodes per measurement after ${WARMUP} warm-up nodes, ${ROUNDS} rounds per side`);
console.log(`statement: ${RAW_CYPHER}`);
try {
  const warm = await measureRaw(server, { batchSize: 20, warmup: 0, nodes: SERVER_WARMUP });
  console.log(`server warm-up: ${SERVER_WARMUP} nodes in batches of 20 through the raw driver in ${warm.seconds.toFixed(2)} s (not counted)`);
  for (const batchSize of BATCH_SIZES) {
    console.log(`\nbatch_size ${batchSize}:`);
    const { looms, raws } = await alternatingRounds(
      ROUNDS,
      {
        loom: () => measureLoom(resource, { batchSize, warmup: WARMUP, nodes: NODES }),
        raw: () => measureRaw(server, { batchSize, warmup: WARMUP, nodes: NODES }),
      },
      {
        before: () => server.clear(),
        report: (round, loomFirst, results) =>
          console.log(
            `  round ${round} (${loomFirst ? 'loom' : 'raw'} first): loom ${NODES} nodes in ${results.loom.seconds.toFixed(2)} s = ${rate(results.loom.perSecond)}` +
              ` (${results.loom.statements} statements, ${results.loom.meanBatch.toFixed(1)} nodes each, ${results.loom.stored} read back);` +
              ` raw driver ${results.raw.seconds.toFixed(2)} s = ${rate(results.raw.perSecond)} (${results.raw.statements} statements, ${results.raw.stored} read back)`,
          ),
      },
    );
    const loom = median(looms.map((result) => result.perSecond));
    const raw = median(raws.map((result) => result.perSecond));
    console.log(`  loom graph writer:  ${rate(loom)} (median)`);
    console.log(`  raw neo4j-driver:   ${rate(raw)} (median)`);
    console.log(`  ratio loom / raw: ${(loom / raw).toFixed(2)} (target: at least 0.9)`);
    console.log(`  expected read back: ${WARMUP + NODES} each`);
  }
} finally {
  await server.close();
}
process.exit(0);
