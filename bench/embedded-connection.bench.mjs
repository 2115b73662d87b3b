// Statements per CPU second through a createPool pool on the embedded graph (PGlite with AGE, in this process), in
// memory (what createPool does for a server of its own process) against loopback TCP (the same server reached as
// `localhost`, which this process does not serve under that name, so the pool takes a socket: what every pool did
// before), in the same run (issue 38). Two statements: `SELECT 1` (the connection's own cost shows most) and a cypher()
// read by key with its parameter in $1, as libs/graph sends them. The sides alternate which goes first, ROUNDS times
// each; the figure of a side is the median of its rounds. CPU is the whole process's (process.cpuUsage: client, server
// and PGlite all run here), so it counts both ends of the socket. The connection counts at the end show which way each
// pool came. BENCH_STATEMENTS (default 2000) is the SELECT 1 count a round; the cypher read runs a quarter as many.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { age } from '@electric-sql/pglite-age';
import { createPool, startEmbeddedPostgres } from '@loom/postgres';

const STATEMENTS = Number(process.env.BENCH_STATEMENTS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const GRAPH = 'bench_connection';
const KEYS = 100;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const fmt = (value) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));

const cypherSql = (cypher, columns) => `SELECT * FROM ag_catalog.cypher('${GRAPH}', $$ ${cypher} $$, $1) AS (${columns})`;
const STATEMENT_KINDS = {
  'SELECT 1': { count: STATEMENTS, run: (db) => db.query('SELECT 1') },
  'cypher() read by key': {
    count: Math.ceil(STATEMENTS / 4),
    run: (db, index) => db.query(cypherSql('MATCH (n:Item {key: $key}) RETURN n.key', 'key ag_catalog.agtype'), [JSON.stringify({ key: index % KEYS })]),
  },
};

/** Runs `count` statements one after another; resolves with statements per CPU second and per wall second. */
async function measure(db, kind) {
  const { count, run } = STATEMENT_KINDS[kind];
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let index = 0; index < count; index++) await run(db, index);
  const wallSeconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return { perCpuSecond: count / cpuSeconds, perSecond: count / wallSeconds };
}

const dir = mkdtempSync(join(tmpdir(), 'loom-bench-connection-'));
const server = await startEmbeddedPostgres({ dataDir: join(dir, 'pgdata'), extensions: { age } });
const pools = {
  'in memory': createPool(server.url),
  // not the address this process serves, so a socket; `embedded` keeps the one connection of an embedded pool
  tcp: createPool(server.url.replace('@127.0.0.1:', '@localhost:'), { embedded: true }),
};
try {
  const setup = pools['in memory'];
  await setup.query('CREATE EXTENSION IF NOT EXISTS age');
  await setup.query("LOAD 'age'");
  await setup.query('SET search_path = ag_catalog, "$user", public');
  await setup.query('SELECT ag_catalog.create_graph($1::name)', [GRAPH]);
  await setup.query(cypherSql('UNWIND range(0, $last) AS key CREATE (:Item {key: key})', 'result ag_catalog.agtype'), [JSON.stringify({ last: KEYS - 1 })]);
  // PGlite's WebAssembly speeds up over its first thousands of statements: both pools warm up before anything counts
  for (const db of Object.values(pools)) for (const kind of Object.keys(STATEMENT_KINDS)) await measure(db, kind);

  console.log(`${ROUNDS} rounds a side, alternating which goes first; load average ${loadavg()[0].toFixed(2)} at the start`);
  for (const kind of Object.keys(STATEMENT_KINDS)) {
    const results = { 'in memory': [], tcp: [] };
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? ['in memory', 'tcp'] : ['tcp', 'in memory'];
      for (const side of order) results[side].push(await measure(pools[side], kind));
    }
    const figure = (side) => ({
      perCpuSecond: median(results[side].map((result) => result.perCpuSecond)),
      perSecond: median(results[side].map((result) => result.perSecond)),
    });
    const memory = figure('in memory');
    const tcp = figure('tcp');
    console.log(
      `${kind} (${STATEMENT_KINDS[kind].count} a round): in memory ${fmt(memory.perCpuSecond)} statements/CPU s (${fmt(memory.perSecond)}/s), ` +
        `TCP ${fmt(tcp.perCpuSecond)} statements/CPU s (${fmt(tcp.perSecond)}/s): ${(memory.perCpuSecond / tcp.perCpuSecond).toFixed(2)}x a CPU second, ` +
        `${(1e3 / memory.perCpuSecond).toFixed(3)} against ${(1e3 / tcp.perCpuSecond).toFixed(3)} ms of CPU a statement`,
    );
  }
  console.log(`connections: ${JSON.stringify(server.connectionCounts())}; load average ${loadavg()[0].toFixed(2)} at the end`);
} finally {
  for (const db of Object.values(pools)) await db.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
