import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * The built `loom` binary's entry point (the test target builds @loom/cli first). @loom/cli's index resolves to its
 * src/index.ts or dist/index.js, by the export condition: the package's folder is above either.
 */
const loomMain = join(dirname(dirname(createRequire(import.meta.url).resolve('@loom/cli'))), 'dist', 'main.js');

/** A `loom serve` child process on a free loopback port, its state in a scratch directory. */
export interface LoomServe {
  readonly address: string;
  /** Its JSON log lines, as written. */
  readonly logLines: readonly string[];
  /** Stops it (SIGTERM: it drains and exits), then removes its state. Idempotent. */
  stop(): Promise<void>;
}

/** Starts `loom serve` with `settings` (each a `--set key=value`) and resolves once it logs 'loom listening'. */
export async function startLoomServe(services: readonly string[], settings: readonly string[]): Promise<LoomServe> {
  const directory = mkdtempSync(join(tmpdir(), 'loom-clients-'));
  const defaults = ['server.port=0', 'loom.telemetry.prometheus.port=0', 'loom.secrets.generateKeys=true', `loom.data.directory=${directory}`];
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', loomMain, 'serve', '--services', services.join(','), ...[...defaults, ...settings].flatMap((setting) => ['--set', setting])],
    { cwd: directory, env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const logLines: string[] = [];
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= stopChild(child, exited).finally(() => rmSync(directory, { recursive: true, force: true }));
    return stopping;
  };
  try {
    const port = await new Promise<number>((resolve, reject) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        logLines.push(line);
        const entry = JSON.parse(line) as { msg?: string; port?: number };
        if (entry.msg === 'loom listening' && typeof entry.port === 'number') resolve(entry.port);
      });
      void exited.then(([code]) => reject(new Error(`loom serve exited with ${code} before listening: ${stderr.join('')}`)));
    });
    return { address: `127.0.0.1:${port}`, logLines, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await exited;
}
