import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../src/cli.js';
import { Command } from 'commander';
import { captureStream } from '@loom/testing';
import { addServeCommand, type RunningLoom, type ServeOptions, startServe } from '../src/commands/serve.js';

/** What a run of the CLI printed and the exit code it ended with. */
export interface CliResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a `loom` command line in this process, as the binary would run it: its own standard output and error, `input`
 * as its standard input (a pipe), `env` (with PATH) as its whole environment and a scratch working directory. Runs
 * may overlap; each sees only its own IO.
 */
export async function runCli(args: readonly string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<CliResult> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const cwd = mkdtempSync(join(tmpdir(), 'loom-cli-'));
  try {
    const status = await run(args, {
      stdout: { write: (text: string) => stdout.push(text) },
      stderr: { write: (text: string) => stderr.push(text) },
      stdin: { isTTY: false, readText: () => options.input ?? '' },
      env: { PATH: process.env.PATH, ...options.env },
      cwd,
    });
    return { status, stdout: stdout.join(''), stderr: stderr.join('') };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** `loom serve` composed in this process on a free port, its state in a scratch directory. */
export interface InProcessLoom {
  readonly port: number;
  readonly address: string;
  /** The web console's address, when `loom.console.port` is set. */
  readonly consoleUrl?: string;
  /** Its JSON log lines (loom's and its skills'), as they are written. */
  readonly logLines: string[];
  /** The directory that holds its state (`loom.data.directory`), removed by `stop`. */
  readonly dataDirectory: string;
  /** Drains and stops it, then removes its state. Idempotent. */
  stop(): Promise<void>;
}

/** How an in-process loom is started, besides its arguments and environment. */
export interface InProcessOptions {
  /**
   * Register its OpenTelemetry providers globally, as the binary does (default false): its spans are recorded and
   * exported (to `loom.telemetry.otlp.endpoint`) only then. One registered loom a test file.
   */
  readonly registerTelemetry?: boolean;
}

/**
 * Starts what `loom serve <args>` starts, in this process: a free gRPC port, no Prometheus port, generated keys and
 * its state in a scratch directory (arguments given later win), logging into `logLines`. `--services`, `--set`,
 * `--config`, `--with-skills` and `--skill-port` are read as the command reads them.
 */
export async function startLoom(args: readonly string[] = [], env: NodeJS.ProcessEnv = {}, options: InProcessOptions = {}): Promise<InProcessLoom> {
  const dataDirectory = mkdtempSync(join(tmpdir(), 'loom-serve-'));
  const log = captureStream();
  const defaults = ['server.port=0', 'loom.telemetry.prometheus.port=0', 'loom.secrets.generateKeys=true', `loom.data.directory=${dataDirectory}`];
  const serve = await serveOptions(args);
  let running: RunningLoom;
  try {
    running = await startServe(
      { ...serve, set: [...defaults, ...serve.set] },
      { env: { PATH: process.env.PATH, ...env }, logDestination: log.stream, registerTelemetry: options.registerTelemetry ?? false },
    );
  } catch (error) {
    rmSync(dataDirectory, { recursive: true, force: true });
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    port: running.port,
    address: `127.0.0.1:${running.port}`,
    ...(running.console === undefined ? {} : { consoleUrl: running.console.url }),
    get logLines() {
      return log
        .text()
        .split('\n')
        .filter((line) => line !== '');
    },
    dataDirectory,
    stop() {
      stopping ??= running.stop().finally(() => rmSync(dataDirectory, { recursive: true, force: true }));
      return stopping;
    },
  };
}

/** The options `loom serve <args>` reads from its command line, parsed by the command itself. */
async function serveOptions(args: readonly string[]): Promise<ServeOptions> {
  let parsed: ServeOptions | undefined;
  const program = new Command('loom').exitOverride();
  addServeCommand(program, (options) => {
    parsed = options;
    return Promise.resolve();
  });
  await program.parseAsync(['serve', ...args], { from: 'user' });
  if (parsed === undefined) throw new TypeError(`loom serve ${args.join(' ')} ran no serve action`);
  return parsed;
}
