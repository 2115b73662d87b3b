import { type ChildProcess, spawn } from 'node:child_process';
import { type Readable } from 'node:stream';
import { Lifecycle, type TransitionTable } from '@loom/foundation';
import { type Logger } from '@loom/telemetry';
import { type PythonSandbox, snapshotMakerCommand } from './sandbox.js';

/** Most bytes of a snapshot's header beyond the interpreter's memory (its JavaScript references as JSON). */
const HEADER_ALLOWANCE = 4 * 1024 * 1024;

type WarmState = 'open' | 'closed';
const WARM_TRANSITIONS: TransitionTable<WarmState> = { open: ['closed'], closed: [] };

/** What warm interpreters are made with. */
export interface WarmInterpreterOptions {
  /** How many to keep ready (`loom.scripts.python.warmInterpreters`); 0 makes none. */
  readonly count: number;
  /** The memory of each interpreter, in MB (`loom.scripts.python.memoryLimitMb`): a snapshot is never larger. */
  readonly memoryLimitMb: number;
  /** The sandbox the makers run in; throws when this machine has none (then none are made). */
  readonly sandbox: () => PythonSandbox;
  readonly logger: Logger;
}

/**
 * Warm Python interpreters for the next script hosts: memory snapshots of freshly started
 * interpreters, so that a host loads one (about 0.5 s) instead of starting CPython from scratch
 * (about 2.5 s). Each snapshot is made by a script host of its own, in the same sandbox as any
 * other, that is given no script, no grant beyond the interpreter's files and no workflow's data,
 * and exits once it has written the snapshot. Each snapshot is given to one host only, so no two
 * hosts share a hash seed or a random number generator's state. Making runs at a low CPU priority,
 * behind the work of running hosts.
 */
export class WarmInterpreters {
  private readonly ready: Buffer[] = [];
  private readonly makers = new Set<ChildProcess>();
  private readonly lifecycle = new Lifecycle<WarmState>('warm Python interpreters', WARM_TRANSITIONS, 'open');
  private readonly waiters: (() => void)[] = [];
  /** Set once making failed, until the next take: a machine that cannot make them does not try again and again. */
  private failing = false;
  private given = 0;

  constructor(private readonly options: WarmInterpreterOptions) {}

  /** How many snapshots are ready now. */
  get available(): number {
    return this.ready.length;
  }

  /** How many snapshots were given out so far. */
  get taken(): number {
    return this.given;
  }

  /** Starts making snapshots until `count` are ready or being made. */
  fill(): void {
    if (!this.lifecycle.is('open') || this.failing) return;
    while (this.ready.length + this.makers.size < this.options.count) {
      let sandbox: PythonSandbox;
      try {
        sandbox = this.options.sandbox();
      } catch {
        return; // no sandbox on this machine: a Python component's start says so, with what is missing
      }
      this.make(sandbox);
    }
  }

  /** A snapshot of a fresh interpreter, given out once, or undefined when none is ready; starts making its replacement. */
  take(): Buffer | undefined {
    const snapshot = this.ready.shift();
    if (snapshot !== undefined) this.given += 1;
    this.failing = false;
    this.fill();
    return snapshot;
  }

  /** Resolves when `count` snapshots are ready, or when making one failed or this closed (for benchmarks and tests). */
  whenFilled(): Promise<void> {
    if (this.ready.length >= this.options.count || this.failing || !this.lifecycle.is('open')) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Ends the makers still running and drops the snapshots; a second call does nothing. */
  close(): Promise<void> {
    if (this.lifecycle.is('closed')) return Promise.resolve();
    this.lifecycle.to('closed');
    for (const maker of this.makers) maker.kill('SIGKILL');
    this.makers.clear();
    this.ready.length = 0;
    this.wake();
    return Promise.resolve();
  }

  private make(sandbox: PythonSandbox): void {
    const command = snapshotMakerCommand(sandbox, this.options.memoryLimitMb);
    const maker = spawn(command.file, command.args, { env: command.env, cwd: '/', stdio: ['pipe', 'ignore', 'pipe', 'pipe'] });
    this.makers.add(maker);
    const limit = this.options.memoryLimitMb * 1024 * 1024 + HEADER_ALLOWANCE;
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    const snapshot = maker.stdio[3] as Readable;
    snapshot.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) maker.kill('SIGKILL');
      else chunks.push(chunk);
    });
    maker.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2_000)));
    // a maker that cannot be spawned or dies surfaces through 'close'; its streams' errors must not be uncaught
    for (const stream of [maker.stdin, maker.stderr, snapshot]) stream?.on('error', () => undefined);
    maker.on('error', () => undefined);
    maker.on('close', (code) => {
      if (!this.makers.delete(maker)) return; // closed meanwhile
      if (code === 0 && size > 0 && size <= limit) {
        this.ready.push(Buffer.concat(chunks));
      } else {
        this.failing = true;
        this.options.logger.warn({ exit: code, output: stderr.trim().split('\n').slice(-2).join(' | ') }, 'a warm Python interpreter could not be made');
      }
      this.wake();
    });
    maker.stdin?.end(`${JSON.stringify({ make: true, pyodideDir: command.pyodideDir, mounts: [], split: [] })}\n`);
  }

  private wake(): void {
    if (this.ready.length < this.options.count && !this.failing && this.lifecycle.is('open')) return;
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}
