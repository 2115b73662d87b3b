#!/usr/bin/env node
// Runs accuracy evaluations: `npm run eval -- <name> [options]` runs bench/<name>.eval.mjs with the options.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const [name, ...options] = process.argv.slice(2);
const script = name ? join(here, `${name}.eval.mjs`) : undefined;
if (!script || !existsSync(script)) {
  console.error(`usage: npm run eval -- <name>; no bench/${name ?? '<name>'}.eval.mjs`);
  process.exit(2);
}
const run = spawnSync(process.execPath, [script, ...options], { stdio: 'inherit' });
process.exit(run.status ?? 1);
