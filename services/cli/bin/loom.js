#!/usr/bin/env node
// The `loom` binary. isolated-vm asks for --no-node-snapshot on Node 20+, so when this
// process was started without it, loom re-runs itself with it and relays signals.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
if (process.execArgv.includes('--no-node-snapshot')) {
  await import(main);
} else {
  const child = spawn(process.execPath, ['--no-node-snapshot', ...process.execArgv, main, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)));
}
