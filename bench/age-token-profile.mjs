#!/usr/bin/env node
// Where a batch of the Token Occurrence Writer's time goes on the embedded graph (PGlite with AGE, behind its socket
// server), issue 38: the relations bench's documents (EWT dev, UNER entities, at most 20 sentences a document) written
// by writeTokenGraph as one batch into a fresh graph per round (its label tables made by that batch, as in the bench),
// then the next as many sentences as a second batch into the same graph (label tables present, as in a long run).
// Prints per batch: checking the annotations and building the rows, the write's wall time, the time of its statements
// (every pg query, from send to answer: on the embedded graph PGlite's work plus the socket; label tables' creation
// apart) and this process's CPU (PGlite's included). VERBOSE=1 lists each statement.
// BENCH_BEFORE=<a libs/graph dist's index.js, e.g. a copy of an older build under libs/graph>: alternates rounds of
// that build's store (first in odd rounds) with this one's, in one process on one server, and prints both medians.
// Not part of `npm run bench`. Needs a build (`npx nx run executor:build`).
// Usage: [BENCH_SENTENCES=600] [BENCH_ROUNDS=6] [BENCH_BEFORE=...] [VERBOSE=1] node bench/age-token-profile.mjs
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ageConnection, createAgeStore, startEmbeddedGraph } from '@loom/graph';
import { annotationFromConllu, parseConllu, parseIob, testDataDir } from '@loom/nlp-training';
import pg from 'pg';
import { TOKEN_GRAPH_INDEXES, tokenGraphDocument, writeTokenGraph } from '../services/executor/dist/components/relations/token-graph.js';

const SENTENCES = Number(process.env.BENCH_SENTENCES ?? 600);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const data = testDataDir();
const conllu = parseConllu(readFileSync(join(data, 'ud-english-ewt', 'en_ewt-ud-dev.conllu'), 'utf8')).slice(0, 2 * SENTENCES);
const entities = new Map(parseIob(readFileSync(join(data, 'uner-english-ewt', 'en_ewt-ud-dev.iob2'), 'utf8')).map((s) => [s.sentId, s]));

/** The bench's documents of `sentences`, numbered from `first`. */
function documentsOf(sentences, first) {
  const groups = [];
  for (const sentence of sentences) {
    if (sentence.newDoc || groups.length === 0 || groups[groups.length - 1].length >= 20) groups.push([]);
    groups[groups.length - 1].push(sentence);
  }
  return groups.map((group, index) => annotationFromConllu(group, { docId: `bench-${first + index}`, entities }));
}
const batches = [documentsOf(conllu.slice(0, SENTENCES), 0), documentsOf(conllu.slice(SENTENCES), 10_000)];
const sentenceCounts = batches.map((batch) => batch.reduce((sum, document) => sum + document.sentences.length, 0));

// every pg query, timed from send to answer
const log = [];
const original = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, ...rest) {
  const text = typeof config === 'string' ? config : config.text;
  const started = performance.now();
  const result = original.call(this, config, ...rest);
  result?.then?.(
    () => log.push({ text, ms: performance.now() - started }),
    () => undefined,
  );
  return result;
};
const cpuSeconds = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const builds = [{ name: 'this build', createAgeStore }];
if (process.env.BENCH_BEFORE !== undefined) {
  const before = await import(pathToFileURL(resolve(process.env.BENCH_BEFORE)).href);
  builds.unshift({ name: `before (${process.env.BENCH_BEFORE})`, createAgeStore: before.createAgeStore });
}
const dir = mkdtempSync(join(tmpdir(), 'loom-age-token-profile-'));
const server = await startEmbeddedGraph({ dataDir: join(dir, 'pgdata') });
const open = (build, graph) => build.createAgeStore(ageConnection({ host: server.host, port: server.port, user: 'postgres', password: '', graph }));

/** Writes one batch as the writer does; answers its figures. */
async function measure(store, documents, sentences) {
  await new Promise((resolve) => setImmediate(resolve));
  log.length = 0;
  const cpu = cpuSeconds();
  const started = performance.now();
  const rows = documents.map((document) => tokenGraphDocument(document, 'body._annotation'));
  const built = performance.now();
  await writeTokenGraph(store, rows);
  const wall = performance.now() - started;
  const cpuMs = (cpuSeconds() - cpu) * 1000;
  await new Promise((resolve) => setImmediate(resolve));
  const labels = log.filter((entry) => /create_[ev]label|SAVEPOINT/.test(entry.text)).reduce((sum, entry) => sum + entry.ms, 0);
  const statements = log.reduce((sum, entry) => sum + entry.ms, 0) - labels;
  return {
    rowsMs: built - started,
    wall,
    cpuMs,
    labels,
    statements,
    queries: log.length,
    rate: sentences / (wall / 1000),
    perCpu: sentences / (cpuMs / 1000),
    log: [...log],
  };
}

const results = new Map(builds.map((build) => [build.name, { fresh: [], present: [] }]));
try {
  for (const build of builds) {
    const warm = open(build, 'warmup');
    await warm.ensurePropertyIndexes(TOKEN_GRAPH_INDEXES);
    await writeTokenGraph(
      warm,
      batches[0].slice(0, 10).map((document) => tokenGraphDocument(document, 'body._annotation')),
    );
    await warm.close();
  }
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 === 1 ? builds : [...builds].reverse();
    for (const build of order) {
      const store = open(build, `profile_${round}_${builds.indexOf(build)}`);
      await store.ensurePropertyIndexes(TOKEN_GRAPH_INDEXES);
      for (const [b, kind] of [
        [0, 'fresh'],
        [1, 'present'],
      ]) {
        const figures = await measure(store, batches[b], sentenceCounts[b]);
        results.get(build.name)[kind].push(figures);
        console.log(
          `round ${round} ${build.name}, ${kind === 'fresh' ? 'fresh graph' : 'label tables present'}: ${sentenceCounts[b]} sentences, ` +
            `rows ${figures.rowsMs.toFixed(0)} ms, write ${figures.wall.toFixed(0)} ms (${figures.queries} queries: label tables ${figures.labels.toFixed(0)} ms, ` +
            `other statements ${figures.statements.toFixed(0)} ms), CPU ${figures.cpuMs.toFixed(0)} ms; ${figures.rate.toFixed(1)} sentences/s, ${figures.perCpu.toFixed(1)} per CPU second`,
        );
        if (process.env.VERBOSE)
          for (const entry of figures.log) console.log(`   ${entry.ms.toFixed(1).padStart(7)} ms  ${entry.text.slice(0, 110).replace(/\s+/g, ' ')}`);
      }
      await store.close();
    }
  }
  for (const [name, kinds] of results) {
    for (const [kind, runs] of Object.entries(kinds)) {
      const m = (key) => median(runs.map((run) => run[key]));
      console.log(
        `median of ${ROUNDS}, ${name}, ${kind === 'fresh' ? 'fresh graph' : 'label tables present'}: write ${m('wall').toFixed(0)} ms, CPU ${m('cpuMs').toFixed(0)} ms ` +
          `(rows ${m('rowsMs').toFixed(0)}, label tables ${m('labels').toFixed(0)}, other statements ${m('statements').toFixed(0)} ms); ` +
          `${m('rate').toFixed(1)} sentences/s, ${m('perCpu').toFixed(1)} per CPU second`,
      );
    }
  }
} finally {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
