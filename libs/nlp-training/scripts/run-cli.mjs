#!/usr/bin/env node
// Builds @loom/nlp-training (and @loom/nlp, whose models/ it writes) with nx, then runs its CLI: `npm run train -- <model>`.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const root = join(pkg, '..', '..');
const build = spawnSync('npx', ['nx', 'run', 'nlp-training:build', '--output-style=stream'], { stdio: 'inherit', cwd: root });
if (build.status !== 0) process.exit(build.status ?? 1);
const run = spawnSync(process.execPath, [join(pkg, 'dist', 'cli.js'), ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(run.status ?? 1);
