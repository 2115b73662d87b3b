// The `loom` binary as a child process, for the tests that need a process of its own: killed (SIGKILL) or stopped by
// a signal, restarted, or whose exit code and output pipe are the point. Every other test runs the CLI and `loom
// serve` in its own process (loom-in-process.ts): a Node start per command costs more than most commands.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A scratch working directory for one `loom` process; removed once the process is gone (a `loom serve` leaves ~65 MB). */
function scratchDirectory(): string {
  return mkdtempSync(join(tmpdir(), 'loom-cli-'));
}

function removeScratch(directory: string): void {
  rmSync(directory, { recursive: true, force: true });
}

/** The built entry point of the `loom` binary (the cli's test target builds it first). */
export const loomMain = fileURLToPath(new URL('../dist/main.js', import.meta.url));

/** A `loom serve` child process on a free port, in a scratch working directory. */
export interface LoomProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly address: string;
  readonly logLines: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `loom serve` as a child process with the given extra arguments and resolves once it logs 'loom listening'. */
export async function startLoomProcess(args: readonly string[] = [], env: NodeJS.ProcessEnv = {}): Promise<LoomProcess> {
  const cwd = scratchDirectory();
  const child = spawn(
    process.execPath,
    [
      '--no-node-snapshot',
      loomMain,
      'serve',
      '--set',
      'server.port=0',
      '--set',
      'loom.telemetry.prometheus.port=0',
      '--set',
      'loom.secrets.generateKeys=true',
      ...args,
    ],
    { cwd, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // its working directory goes with it: nothing outside this module knows the directory
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      removeScratch(cwd);
      resolve({ code, signal });
    }),
  );
  const logLines: string[] = [];
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      logLines.push(line);
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === 'loom listening' && typeof entry.port === 'number') resolve(entry.port);
    });
    void exited.then(({ code }) => reject(new Error(`loom exited with ${code} before listening: ${stderr.join('')}`)));
  });
  return { child, port, address: `127.0.0.1:${port}`, logLines, exited };
}

/** Runs the `loom` binary to completion. */
export function runLoomBinary(args: readonly string[], env: NodeJS.ProcessEnv = {}, input?: string): { status: number | null; stdout: string; stderr: string } {
  const cwd = scratchDirectory();
  const result = spawnSync(process.execPath, ['--no-node-snapshot', loomMain, ...args], {
    ...(input === undefined ? {} : { input }),
    cwd,
    env: { PATH: process.env.PATH, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  removeScratch(cwd);
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A resource file for `loom graph query` naming an AGE graph of a loom's embedded graph, at the port its log gives. */
export function embeddedGraphResource(loom: { readonly logLines: readonly string[] }, graph: string): string {
  const started = loom.logLines.map((line) => JSON.parse(line) as { msg: string; port?: number }).find((entry) => entry.msg.startsWith('embedded graph'));
  if (started?.port === undefined) throw new Error('loom logged no embedded graph port');
  const file = join(mkdtempSync(join(tmpdir(), 'loom-graph-')), 'graph.json');
  writeFileSync(
    file,
    JSON.stringify({
      resource: { qualifiedName: 'loom.resources.graph.AgeDatabase' },
      parameters: { host: '127.0.0.1', port: started.port, user: 'postgres', graph },
    }),
  );
  return file;
}

/** Stops a loom the test started (SIGTERM) and waits for its exit; one already gone (killed) is left as it is. */
export async function stopLoom(loom: LoomProcess | undefined): Promise<void> {
  if (loom === undefined || loom.child.exitCode !== null || loom.child.signalCode !== null) return;
  loom.child.kill('SIGTERM');
  await loom.exited;
}
