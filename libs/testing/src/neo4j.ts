import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import { Wakeup } from './wakeup.js';

/** A Neo4j server of the tests' own, on loopback, with an empty database `neo4j`. */
export interface Neo4jTestServer {
  /** `bolt://127.0.0.1:<port>` */
  readonly uri: string;
  readonly user: string;
  readonly password: string;
  /** The server's directory (its logs are in logs/debug.log); close() removes it. */
  readonly home: string;
  /** The JVM's process id (a benchmark reads the server's CPU time from it). */
  readonly pid: number;
  /** Empties the database: every node and relationship, every index and constraint. */
  clear(): Promise<void>;
  /**
   * Stops the JVM and removes its directory; a server lent by the run's pool goes back to it instead, emptied. A
   * second call waits for the first.
   */
  close(): Promise<void>;
}

/** Where the test run's pool of Neo4j servers lends them (`host:port`), set by the run's global setup. */
export const NEO4J_POOL_ENV = 'LOOM_NEO4J_POOL';

/** The parameters of a loom Neo4j resource on the server (a type, not an interface: it is a resource's parameter map). */
export type Neo4jResourceParameters = {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
};

/**
 * The parameters of a loom Neo4j resource on `server`: a bare host and port, so the resource speaks bolt:// to that
 * one server (and a FaultProxy's host and port can stand in for it).
 */
export function neo4jResourceParameters(server: Pick<Neo4jTestServer, 'uri' | 'user' | 'password'>): Neo4jResourceParameters {
  const { hostname, port } = new URL(server.uri);
  return { host: hostname, port: Number(port), user: server.user, password: server.password };
}

/** Options of startNeo4j. */
export interface StartNeo4jOptions {
  /** How long the JVM may take to accept Bolt connections; default 180 s (a few seconds on an idle machine). */
  readonly readyTimeoutMs?: number;
  /** The JVM's maximum heap (`-Xmx`); default `512m`. */
  readonly maxHeap?: string;
  /**
   * How the JVM is tuned. `quick-start` (default, for tests): the quick compiler only and one GC thread, which start
   * faster on a busy machine and run slower. `throughput`: the JVM's own defaults (both compilers, its default
   * collector), as a deployed Neo4j runs, for benchmarks that measure the server's speed.
   */
  readonly jvm?: Neo4jJvmTuning;
  /**
   * A server of this caller's own, started for it and stopped by its close(), even when the test run has a pool of
   * servers (LOOM_NEO4J_POOL). Without it, and with the default heap and tuning, a run's pool lends one instead.
   */
  readonly own?: boolean;
}

/** How startNeo4j tunes the server's JVM (StartNeo4jOptions.jvm). */
export type Neo4jJvmTuning = 'quick-start' | 'throughput';

const JVM_FLAGS: Record<Neo4jJvmTuning, readonly string[]> = {
  // a short-lived test server: the quick compiler and one GC thread start faster on a busy machine
  'quick-start': ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'],
  throughput: [],
};

/** LOOM_NEO4J_LAUNCHER is unset or does not hold a built launcher. */
export class Neo4jLauncherMissingError extends Error {
  constructor(reason: string) {
    super(
      `${reason}: run the tests through \`npm test\`, which builds the Neo4j launcher, or build it with ` +
        '`export $(node scripts/test-env/neo4j.mjs)` and run vitest again',
    );
    this.name = 'Neo4jLauncherMissingError';
  }
}

/** The Neo4j JVM exited, or did not get ready in time, or refused a command; the message ends with its stderr. */
export class Neo4jStartError extends Error {
  constructor(
    reason: string,
    /** The last lines the JVM wrote to stderr. */
    readonly stderrTail: string,
  ) {
    super(stderrTail === '' ? reason : `${reason}; the JVM's stderr ends with:\n${stderrTail}`);
    this.name = 'Neo4jStartError';
  }
}

const STDERR_LINES_KEPT = 40;
const STOP_DEADLINE_MS = 30_000;

/**
 * Starts an embedded Neo4j Community server (the launcher that `scripts/test-env/neo4j.mjs` builds, found through
 * LOOM_NEO4J_LAUNCHER) on a fresh temporary directory, Bolt on a free loopback port, user `neo4j` with a random
 * password. One per test file (in beforeAll) is the model; `clear()` gives each test an empty database. In a test run
 * with a pool of servers (LOOM_NEO4J_POOL, vitest.neo4j-pool.ts) it borrows one of the pool's instead, empty, for as
 * long as the file holds it: the run starts as many JVMs as files used Neo4j at once, not one a file.
 */
export async function startNeo4j(options: StartNeo4jOptions = {}): Promise<Neo4jTestServer> {
  jvmFlags(options.jvm);
  const pool = process.env[NEO4J_POOL_ENV];
  if (pool !== undefined && pool !== '' && options.own !== true && options.jvm === undefined && options.maxHeap === undefined) {
    return borrowNeo4j(pool, options.readyTimeoutMs ?? 180_000);
  }
  launcherJar(); // a missing launcher is said before anything is made
  const home = await mkdtemp(join(tmpdir(), 'loom-neo4j-'));
  const password = randomBytes(12).toString('hex');
  const child = spawn('java', neo4jLauncherArguments(home, options), { stdio: ['pipe', 'pipe', 'pipe'] });
  const jvm = new LauncherProcess(child);
  // the password goes on stdin, not the command line, where any local user could read it
  child.stdin.write(`${password}\n`);
  try {
    const ready = await jvm.nextLine(options.readyTimeoutMs ?? 180_000, 'to start');
    const match = /^READY (bolt:\/\/\S+)$/.exec(ready);
    if (match === null) throw new Neo4jStartError(`the Neo4j launcher answered '${ready}' instead of READY`, jvm.stderrTail());
    const uri = match[1]!;
    let closing: Promise<void> | undefined;
    return {
      uri,
      pid: child.pid!,
      user: 'neo4j',
      password,
      home,
      clear: () => jvm.command('CLEAR', 'CLEARED'),
      close: () => (closing ??= jvm.stop().finally(() => rm(home, { recursive: true, force: true }))),
    };
  } catch (error) {
    await jvm.stop();
    await rm(home, { recursive: true, force: true });
    throw error;
  }
}

/**
 * The `java` arguments that run the Neo4j launcher (LOOM_NEO4J_LAUNCHER) on `home`, Bolt on a free loopback port, the
 * JVM tuned as `options` say; it reads the password on stdin and answers `READY <bolt uri>` on stdout. startNeo4j runs
 * it; a test of the launcher itself starts it the same way. Throws Neo4jLauncherMissingError without a built launcher.
 */
export function neo4jLauncherArguments(home: string, options: Pick<StartNeo4jOptions, 'maxHeap' | 'jvm'> = {}): string[] {
  const tuning = jvmFlags(options.jvm);
  const { launcher, jar } = launcherJar();
  return [
    `-Xmx${options.maxHeap ?? '512m'}`,
    ...tuning,
    ...classArchiveFlags(launcher, options.jvm),
    ...['-cp', [jar, join(launcher, 'lib', '*')].join(delimiter)],
    'loom.testing.Neo4jLauncher',
    home,
    '0',
    // the JVM removes its directory itself, also when this process is killed and close() never runs
    '--delete-home-on-exit',
  ];
}

/** The built launcher LOOM_NEO4J_LAUNCHER names and its jar, or Neo4jLauncherMissingError. */
function launcherJar(): { launcher: string; jar: string } {
  const launcher = process.env['LOOM_NEO4J_LAUNCHER'];
  if (launcher === undefined || launcher === '') throw new Neo4jLauncherMissingError('LOOM_NEO4J_LAUNCHER is not set');
  const jar = join(launcher, 'neo4j-launcher.jar');
  if (!existsSync(jar)) throw new Neo4jLauncherMissingError(`LOOM_NEO4J_LAUNCHER=${launcher} has no neo4j-launcher.jar`);
  return { launcher, jar };
}

/**
 * The flags that start a quick-start server from the launcher's class archive, when scripts/test-env/neo4j.mjs wrote
 * one (`neo4j-quick-start.jsa`): its classes mapped rather than loaded and verified again. The JVM's warnings go to
 * stderr, not to stdout where the launcher answers (an archive of another JVM is refused with a warning, and the
 * server starts without it).
 */
function classArchiveFlags(launcher: string, tuning: Neo4jJvmTuning | undefined): readonly string[] {
  const archive = join(launcher, 'neo4j-quick-start.jsa');
  if ((tuning ?? 'quick-start') !== 'quick-start' || !existsSync(archive)) return [];
  return [`-XX:SharedArchiveFile=${archive}`, '-Xlog:disable', '-Xlog:all=warning:stderr'];
}

function jvmFlags(tuning: Neo4jJvmTuning | undefined): readonly string[] {
  const flags = JVM_FLAGS[tuning ?? 'quick-start'] as readonly string[] | undefined;
  if (flags === undefined) throw new TypeError(`startNeo4j: jvm must be one of ${Object.keys(JVM_FLAGS).join(', ')}, got '${String(tuning)}'`);
  return flags;
}

/** Runs what it is given one after another, in the order given, whether or not the one before failed. */
function oneAtATime(): (run: () => Promise<void>) => Promise<void> {
  let queue: Promise<void> = Promise.resolve();
  return (run) => {
    const result = queue.then(run);
    queue = result.catch(() => undefined);
    return result;
  };
}

/** Lines as they arrive, taken one at a time: `next` waits for the next one, and fails once none can come or time ran out. */
class LineQueue {
  private readonly lines: string[] = [];
  private readonly wakeup = new Wakeup();
  private ended = false;

  push(line: string): void {
    this.lines.push(line);
    this.wakeup.wake();
  }

  /** No more lines will come: a `next` waiting, or called later with none left, fails. */
  end(): void {
    this.ended = true;
    this.wakeup.wake();
  }

  async next(timeoutMs: number, failure: (why: 'ended' | 'timed-out') => Error): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.shift();
      if (line !== undefined) return line;
      if (this.ended) throw failure('ended');
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw failure('timed-out');
      await this.wakeup.wait(remaining);
    }
  }
}

/** The launcher's JVM: its stdout read as lines (answers), its stderr's tail kept for errors. */
class LauncherProcess {
  private readonly lines = new LineQueue();
  private readonly stderr: string[] = [];
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private spawnError: Error | undefined;
  private readonly exited: Promise<void>;
  private readonly inTurn = oneAtATime();

  constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => this.lines.push(line));
    createInterface({ input: child.stderr! }).on('line', (line) => {
      this.stderr.push(line);
      if (this.stderr.length > STDERR_LINES_KEPT) this.stderr.shift();
    });
    // the JVM stops by itself when stdin closes; a write after that must not crash the test process
    child.stdin!.on('error', () => undefined);
    this.exited = new Promise((resolve) => {
      child.once('error', (error) => {
        this.spawnError = error;
        resolve();
        this.lines.end();
      });
      child.once('close', (code, signal) => {
        this.exit = { code, signal };
        resolve();
        this.lines.end();
      });
    });
  }

  stderrTail(): string {
    return this.stderr.join('\n');
  }

  /** The next line the launcher prints, or a Neo4jStartError when it exits or `timeoutMs` passes first. */
  nextLine(timeoutMs: number, what: string): Promise<string> {
    return this.lines.next(timeoutMs, (why) => {
      if (why === 'timed-out')
        return new Neo4jStartError(`the Neo4j JVM did not answer within ${timeoutMs / 1000} s while waiting for it ${what}`, this.stderrTail());
      if (this.spawnError !== undefined) return new Neo4jStartError(`cannot run java for Neo4j: ${this.spawnError.message}`, '');
      const signal = this.exit?.signal ?? null;
      const how = signal === null ? `exit code ${this.exit?.code ?? null}` : `signal ${signal}`;
      return new Neo4jStartError(`the Neo4j JVM ended (${how}) while waiting for it ${what}`, this.stderrTail());
    });
  }

  /** Sends one command line and expects `answer`; commands run one at a time. */
  command(command: string, answer: string): Promise<void> {
    return this.inTurn(async () => {
      this.child.stdin!.write(`${command}\n`);
      const line = await this.nextLine(60_000, `to ${command}`);
      if (line !== answer) throw new Neo4jStartError(`the Neo4j launcher answered ${command} with '${line}'`, this.stderrTail());
    });
  }

  /** Closes stdin (the launcher then shuts Neo4j down) and waits for the exit; kills the JVM after a deadline. */
  async stop(): Promise<void> {
    if (this.exit === undefined && this.spawnError === undefined) {
      this.child.stdin!.end();
      const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_DEADLINE_MS);
      await this.exited;
      clearTimeout(timer);
    }
  }
}

/**
 * Borrows a server from the test run's pool at `address` (vitest.neo4j-pool.ts, startNeo4jPool): the pool answers the
 * connection with the server's coordinates and keeps it for this caller while the connection stays open; `clear()` asks
 * the pool to empty it, `close()` ends the connection and the pool takes it back (also when this process dies).
 */
async function borrowNeo4j(address: string, readyTimeoutMs: number): Promise<Neo4jTestServer> {
  const { hostname, port } = new URL(`tcp://${address}`);
  const socket = connect(Number(port), hostname);
  socket.setNoDelay(true);
  const answers = new LineQueue();
  // a pool that went away fails the next answer awaited, not the process (readline passes the socket's errors on)
  socket.on('error', () => undefined);
  createInterface({ input: socket })
    .on('line', (line) => answers.push(line))
    .on('error', () => undefined);
  socket.once('close', () => answers.end());
  const next = (what: string, timeoutMs: number): Promise<string> =>
    answers.next(timeoutMs, (why) =>
      why === 'ended'
        ? new Neo4jStartError(`the test run's Neo4j pool closed the connection while waiting ${what}`, '')
        : new Neo4jStartError(`the test run's Neo4j pool did not answer within ${timeoutMs / 1000} s while waiting ${what}`, ''),
    );
  const first = await next('for a server', readyTimeoutMs).catch((error: unknown) => {
    socket.destroy();
    throw error;
  });
  if (!first.startsWith('{')) {
    socket.destroy();
    throw new Neo4jStartError(`the test run's Neo4j pool could not lend a server: ${first.replace(/^FAILED /, '')}`, '');
  }
  const lent = JSON.parse(first) as Pick<Neo4jTestServer, 'uri' | 'user' | 'password' | 'home' | 'pid'>;
  const inTurn = oneAtATime();
  let closing: Promise<void> | undefined;
  return {
    ...lent,
    clear: () =>
      inTurn(async () => {
        socket.write('CLEAR\n');
        const answer = await next('to clear its server', 60_000);
        if (answer !== 'CLEARED') throw new Neo4jStartError(`the test run's Neo4j pool answered CLEAR with '${answer}'`, '');
      }),
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (socket.destroyed) resolve();
        else socket.once('close', () => resolve()).end();
      });
      return closing;
    },
  };
}
