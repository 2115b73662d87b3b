#!/usr/bin/env node
// Runs the benchmarks: `npm run bench` (all), `npm run bench -- config-store` (those whose file name contains it).
// Each benchmark prints its figures and ratios against a baseline measured in the same run; none passes or fails.
// Each run's output is also saved, with its date, commit and load average, in bench/results/<name>.json (not
// committed); `npm run bench:report` prints the last saved run of every benchmark, and `-- --write` writes them into
// docs/benchmarks.md, where the README and docs/decisions.md take their figures from.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2] ?? '';
const benches = readdirSync(here)
  .filter((file) => file.endsWith('.bench.mjs') && file.includes(filter))
  .sort();
if (benches.length === 0) {
  console.error(`no benchmark matches '${filter}'`);
  process.exit(2);
}

// the graph benchmarks on Neo4j start the tests' launcher: built once, as npm test builds it
if (benches.some((bench) => /neo4j|relations/.test(bench)) && process.env.LOOM_NEO4J_LAUNCHER === undefined) {
  const { ensureNeo4j } = await import('../scripts/test-env/neo4j.mjs');
  Object.assign(process.env, await ensureNeo4j());
}

const build = spawnSync('npx', ['nx', 'run-many', '-t', 'build', '--output-style=stream'], { stdio: 'inherit', cwd: join(here, '..') });
if (build.status !== 0) process.exit(build.status ?? 1);

const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: here, encoding: 'utf8' }).trim();
const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: here, encoding: 'utf8' }).trim() !== '';
const resultsDir = join(here, 'results');
mkdirSync(resultsDir, { recursive: true });

/** Runs one benchmark, its output shown as it comes and kept; resolves with its exit code and output. */
function runBench(bench) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', join(here, bench)], { stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks = [];
    child.stdout.on('data', (chunk) => {
      chunks.push(chunk);
      process.stdout.write(chunk);
    });
    child.on('close', (code) => resolve({ code, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

let failed = false;
for (const bench of benches) {
  console.log(`\n== ${bench}`);
  const started = new Date();
  const loadBefore = loadavg()[0];
  const { code, output } = await runBench(bench);
  if (code !== 0) {
    failed = true;
    continue; // a failed run is not a result: the last good one stays
  }
  const name = bench.replace(/\.bench\.mjs$/, '');
  const result = {
    bench: name,
    date: started.toISOString(),
    seconds: Math.round((Date.now() - started.getTime()) / 1000),
    commit: dirty ? `${commit} (with uncommitted changes)` : commit,
    loadAverage: { before: Number(loadBefore.toFixed(2)), after: Number(loadavg()[0].toFixed(2)) },
    // settings from the environment (BENCH_CALLS, LOOM_BASELINE_MAIN…): a reduced run says so
    environment: Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith('BENCH_') || key === 'LOOM_BASELINE_MAIN')),
    output: output.trimEnd().split('\n'),
  };
  writeFileSync(join(resultsDir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
}
process.exit(failed ? 1 : 0);
