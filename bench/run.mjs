#!/usr/bin/env node
// Runs the benchmarks: `npm run bench` (all), `npm run bench -- config-store` (those whose file name contains it).
// Each benchmark prints its figures and ratios against a baseline measured in the same run; none passes or fails.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
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

const build = spawnSync('npx', ['nx', 'run-many', '-t', 'build', '--output-style=stream'], { stdio: 'inherit', cwd: join(here, '..') });
if (build.status !== 0) process.exit(build.status ?? 1);

let failed = false;
for (const bench of benches) {
  console.log(`\n== ${bench}`);
  const run = spawnSync(process.execPath, ['--no-node-snapshot', join(here, bench)], { stdio: 'inherit' });
  if (run.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
