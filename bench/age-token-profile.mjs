#!/usr/bin/env node
// Where a batch of the Token Occurrence Writer's time goes on the embedded graph (PGlite with AGE, behind its socket
// server), issue 38: the relations bench's documents (EWT dev, UNER entities, at most 20 sentences a document) written
// by writeTokenGraph as one batch into a fresh graph per round, as the bench's batched write does. Prints per round the
// time to check the annotations and build the rows, the write's wall time, its statements (every pg query, timed from
// send to answer, which on the embedded graph is PGlite's work plus the socket) and this process's CPU; VERBOSE=1
// lists each statement. Not part of `npm run bench`. Needs a build (`npx nx run executor:build`).
// Usage: [BENCH_SENTENCES=600] [BENCH_ROUNDS=5] [VERBOSE=1] node bench/age-token-profile.mjs
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RESOURCE_KINDS } from '@loom/domain';
import { openGraphStore, startEmbeddedGraph } from '@loom/graph';
import { annotationFromConllu, parseConllu, parseIob, testDataDir } from '@loom/nlp/training';
import pg from 'pg';
import { TOKEN_GRAPH_INDEXES, tokenGraphDocument, writeTokenGraph } from '../services/executor/dist/components/relations/token-graph.js';

const SENTENCES = Number(process.env.BENCH_SENTENCES ?? 600);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const data = testDataDir();
const conllu = parseConllu(readFileSync(join(data, 'ud-english-ewt', 'en_ewt-ud-dev.conllu'), 'utf8')).slice(0, SENTENCES);
const entities = new Map(parseIob(readFileSync(join(data, 'uner-english-ewt', 'en_ewt-ud-dev.iob2'), 'utf8')).map((s) => [s.sentId, s]));
const groups = [];
for (const sentence of conllu) {
  if (sentence.newDoc || groups.length === 0 || groups[groups.length - 1].length >= 20) groups.push([]);
  groups[groups.length - 1].push(sentence);
}
const annotations = groups.map((group, index) => annotationFromConllu(group, { docId: `bench-${index}`, entities }));

// time every pg query
const log = [];
const original = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, ...rest) {
  const text = typeof config === 'string' ? config : config.text;
  const started = performance.now();
  const result = original.call(this, config, ...rest);
  if (result && typeof result.then === 'function') {
    result.then(
      () => log.push({ text, ms: performance.now() - started, bytes: typeof config === 'string' ? 0 : JSON.stringify(config.values ?? []).length }),
      () => undefined,
    );
  }
  return result;
};

const dir = mkdtempSync(join(tmpdir(), 'loom-age-token-profile-'));
const server = await startEmbeddedGraph({ dataDir: join(dir, 'pgdata') });
const open = (graph) =>
  openGraphStore({
    resource: { qualifiedName: RESOURCE_KINDS.AGE_DATABASE },
    parameters: { host: server.host, port: server.port, user: 'postgres', password: '', graph },
  });
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
try {
  const warm = open('warmup');
  await warm.ensurePropertyIndexes(TOKEN_GRAPH_INDEXES);
  await writeTokenGraph(
    warm,
    annotations.slice(0, 10).map((a) => tokenGraphDocument(a, 'body._annotation')),
  );
  await warm.close();
  for (let round = 1; round <= ROUNDS; round++) {
    const store = open(`profile_${round}`);
    await store.ensurePropertyIndexes(TOKEN_GRAPH_INDEXES);
    log.length = 0;
    const c0 = cpu();
    const t0 = performance.now();
    const documents = annotations.map((a) => tokenGraphDocument(a, 'body._annotation'));
    const t1 = performance.now();
    await writeTokenGraph(store, documents);
    const t2 = performance.now();
    const c1 = cpu();
    await new Promise((resolve) => setImmediate(resolve));
    const inQueries = log.reduce((sum, entry) => sum + entry.ms, 0);
    console.log(
      `round ${round}: ${conllu.length} sentences, check+rows ${(t1 - t0).toFixed(1)} ms, write ${(t2 - t1).toFixed(1)} ms (${log.length} queries, ${inQueries.toFixed(1)} ms in them), CPU ${((c1 - c0) * 1000).toFixed(0)} ms; ` +
        `${(conllu.length / ((t2 - t0) / 1000)).toFixed(1)} sentences/s`,
    );
    if (process.env.VERBOSE)
      for (const entry of log)
        console.log(`   ${entry.ms.toFixed(1).padStart(7)} ms ${String(entry.bytes).padStart(8)} B  ${entry.text.slice(0, 110).replace(/\s+/g, ' ')}`);
    await store.close();
  }
} finally {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
