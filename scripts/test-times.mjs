#!/usr/bin/env node
// Each project's test wall time from its last vitest run (recorded by vitest.shared.ts in .loom/test-times), slowest
// first. `node scripts/test-times.mjs` prints the table; `-- --write` writes it into docs/test-times.md.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, '.loom', 'test-times');

/** The recorded runs, slowest first. */
export function testTimes() {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')))
    .sort((a, b) => b.seconds - a.seconds);
}

/** The table as Markdown. */
export function timesTable(times) {
  const rows = times.map(
    (time) => `| \`${time.package}\` | ${time.seconds.toFixed(1)} | ${time.files} | ${time.tests} | ${time.date.slice(0, 16).replace('T', ' ')} |`,
  );
  return ['| project | wall time (s) | files | tests | run (UTC) |', '|---|---:|---:|---:|---|', ...rows].join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const times = testTimes();
  if (times.length === 0) {
    console.error('no test run recorded yet: run npm test');
    process.exit(1);
  }
  const table = timesTable(times);
  if (!process.argv.includes('--write')) {
    console.log(table);
  } else {
    const total = times.reduce((sum, time) => sum + time.seconds, 0);
    const page = `# Test wall times

Each project's test run as vitest timed it (its Duration: start to end, files run in parallel within the project),
from the last \`npm test\` on a ${cpus().length}-core machine, slowest first. nx runs two projects at a time, so the
whole of \`npm test\` takes less than their sum (${total.toFixed(0)} s here). Written by
\`node scripts/test-times.mjs --write\` from \`.loom/test-times\`, which every vitest run fills.

${table}
`;
    writeFileSync(join(root, 'docs', 'test-times.md'), page);
    console.log('wrote docs/test-times.md');
  }
}
