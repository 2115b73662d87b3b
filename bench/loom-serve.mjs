// A real `loom serve` child process for benchmarks: its own temporary data directory (removed when it stops), a free
// port read back from its 'loom listening' log line, and the time and resident memory it took to get there.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { statCpuSeconds } from './thread-cpu.mjs';

/** The built `loom` entry point of this checkout. */
export const loomMain = fileURLToPath(new URL('../services/cli/dist/main.js', import.meta.url));

/** Resident memory of a process in bytes (Linux /proc), or undefined once it is gone. */
export function rssOf(pid) {
  try {
    const pages = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    return pages * 4096;
  } catch {
    return undefined; // the process ended: nothing to measure
  }
}

/** CPU time (user + system) a process has used so far, in seconds (Linux /proc, in clock ticks of 10 ms), or undefined once it is gone. */
export function cpuSecondsOf(pid) {
  try {
    return statCpuSeconds(`/proc/${pid}/stat`);
  } catch {
    return undefined; // the process ended: nothing to measure
  }
}

/**
 * Starts `node --no-node-snapshot <nodeArgs> <main> serve …` in `cwd` (a new temporary directory unless given) and resolves once it
 * logs 'loom listening': `{ child, port, address, spawnedAt, startMs, rssAtListening, stop() }`. `onLine` sees every JSON
 * log line, before and after listening. `stop` sends SIGTERM, waits for the exit, and removes the directory when this
 * function made it.
 */
export async function startLoomServe({ main = loomMain, args = [], cwd, env = {}, nice = 0, nodeArgs = [], onLine } = {}) {
  const made = cwd === undefined;
  const directory = cwd ?? mkdtempSync(join(tmpdir(), 'loom-bench-serve-'));
  const started = performance.now();
  const argv = ['--no-node-snapshot', ...nodeArgs, main, 'serve', '--set', 'server.port=0', '--set', 'loom.telemetry.prometheus.port=0', ...args];
  const child =
    nice > 0
      ? spawn('nice', ['-n', String(nice), process.execPath, ...argv], {
          cwd: directory,
          env: { PATH: process.env.PATH, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
      : spawn(process.execPath, argv, { cwd: directory, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const stderr = [];
  child.stderr.on('data', (chunk) => stderr.push(chunk.toString()));
  let port;
  try {
    port = await new Promise((resolve, reject) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        let entry;
        try {
          entry = JSON.parse(line);
        } catch {
          return; // not a log line (a child's output): nothing to read
        }
        onLine?.(entry);
        if (entry.msg === 'loom listening' && typeof entry.port === 'number') resolve(entry.port);
      });
      void exited.then(({ code }) => reject(new Error(`loom exited with ${code} before listening: ${stderr.join('').slice(0, 2000)}`)));
    });
  } catch (error) {
    if (made) rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  const startMs = performance.now() - started;
  const rssAtListening = rssOf(child.pid);
  return {
    child,
    port,
    address: `127.0.0.1:${port}`,
    directory,
    spawnedAt: started,
    startMs,
    rssAtListening,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      if (made) rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** The median of some numbers. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The q-quantile (0..1) of some numbers. */
export function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
