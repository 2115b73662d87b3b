#!/usr/bin/env node
// `npm run eval -- nlp [--sample N] [--record]`: builds @loom/nlp-training and evaluates the committed models on EWT dev and held-out UNER.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const run = spawnSync(process.execPath, [join(here, '..', 'libs', 'nlp-training', 'scripts', 'run-cli.mjs'), 'eval', 'nlp', ...process.argv.slice(2)], {
  stdio: 'inherit',
});
process.exit(run.status ?? 1);
