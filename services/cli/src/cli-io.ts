import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** A stream the CLI writes to: the process's stdout or stderr, or a test's buffer. */
export interface CliOutput {
  write(text: string): unknown;
  /** True when a person watches it (progress is drawn only then). */
  readonly isTTY?: boolean;
}

/** Standard input as the CLI reads it: whole, once, when a command asks for it. */
export interface CliInput {
  /** True when standard input is a terminal, not a pipe or a file. */
  readonly isTTY: boolean;
  /** Everything on standard input. */
  readText(): string;
}

/** Where one run of the CLI reads and writes: the process by default; a test's buffers when run in process. */
export interface CliIo {
  readonly stdout: CliOutput;
  readonly stderr: CliOutput;
  readonly stdin: CliInput;
  readonly env: NodeJS.ProcessEnv;
  /** The directory relative paths on the command line are taken from. */
  readonly cwd: string;
}

/** The real process's standard streams, environment and working directory. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: {
      get isTTY() {
        return process.stdin.isTTY === true;
      },
      // descriptor 0 rather than /dev/stdin: opening /dev/stdin fails with ENXIO when standard input is a socket
      readText: () => readFileSync(0, 'utf8'),
    },
    env: process.env,
    cwd: process.cwd(),
  };
}

/** One run's context: its IO and the exit code its command asked for. */
interface CliRun {
  readonly io: CliIo;
  exitCode: number;
}

// per run, not per process: runs in one process (tests) each see their own, also when they overlap
const runs = new AsyncLocalStorage<CliRun>();

/** Runs `body` with `io` as the CLI's IO; resolves with the body's result and the exit code a command set (0 if none). */
export async function withCliIo<T>(io: CliIo, body: () => Promise<T>): Promise<{ result: T; exitCode: number }> {
  const run: CliRun = { io, exitCode: 0 };
  const result = await runs.run(run, body);
  return { result, exitCode: run.exitCode };
}

/** The IO of the CLI run in progress: the process's own outside any run. */
export function cliIo(): CliIo {
  return runs.getStore()?.io ?? processIo();
}

/**
 * `listener` bound to the CLI run in progress: an event emitter (a gRPC stream) calls its listeners in the context of
 * whatever emitted, where `cliIo()` would not find the run.
 */
export function inThisRun<A extends unknown[], R>(listener: (...args: A) => R): (...args: A) => R {
  return AsyncLocalStorage.bind(listener);
}

/** Sets the exit code of the CLI run in progress (a command that printed its result but failed, e.g. a broken audit log). */
export function setExitCode(code: number): void {
  const run = runs.getStore();
  if (run === undefined) process.exitCode = code;
  else run.exitCode = code;
}

/** A path from the command line, taken relative to the run's working directory. */
export function inputPath(path: string): string {
  return resolve(cliIo().cwd, path);
}
