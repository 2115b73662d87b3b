#!/usr/bin/env node
// The `loom` binary. isolated-vm asks for --no-node-snapshot on Node 20+, so when this process
// was started without it and is to run services (`serve`) or workflows (`workflow test`, the dry run in process), loom
// re-runs itself with it and relays signals. Every other command runs in this process: a second Node start would
// double its time.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const args = process.argv.slice(2);
if (!existsSync(main)) {
  // a fresh clone after `npm install`: npm links this file as `loom` before anything is built
  process.stderr.write(`loom: not built yet (no ${main}): run \`npm run build\` (or \`npm start\`, which builds it and serves) in the repository first\n`);
  process.exit(1);
} else if (process.execArgv.includes('--no-node-snapshot') || !(args.includes('serve') || (args.includes('workflow') && args.includes('test')))) {
  await import(main);
} else {
  const child = spawn(process.execPath, ['--no-node-snapshot', ...process.execArgv, main, ...args], { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)));
}
