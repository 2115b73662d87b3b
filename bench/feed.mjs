// Runs bench/publish-feeder.mjs as its own process (as a user's publisher is) and answers what it printed: the shared
// launcher of the publish benchmarks (publish.bench.mjs, durable.bench.mjs).
import { spawn } from 'node:child_process';

/** Runs the feeder with `settings` (see publish-feeder.mjs) and resolves with its JSON line; rejects when it fails. */
export function feed(settings) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', new URL('./publish-feeder.mjs', import.meta.url).pathname, JSON.stringify(settings)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const out = [];
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(Buffer.concat(out).toString())) : reject(new Error(`feeder ${settings.mode} exited with ${code}`)),
    );
  });
}
