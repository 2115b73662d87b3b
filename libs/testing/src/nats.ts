import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Lifecycle, ShutdownOnce } from '@loom/foundation';
import { closedPort } from './ports.js';
import { Wakeup } from './wakeup.js';

/** The environment variable naming the nats-server binary the tests run (`npm test` builds one and sets it). */
export const NATS_SERVER_ENV = 'LOOM_NATS_SERVER';

const HOW_TO_GET_IT = '`npm test` builds nats-server and sets it; to run one file, export what `node scripts/test-env/nats.mjs` prints';

/** LOOM_NATS_SERVER is unset or names no file, where the tests must not be skipped (CI, or startNatsServer itself). */
export class NatsServerMissingError extends Error {
  constructor(suite: string, reason: string) {
    super(`${suite}: ${reason}`);
    this.name = 'NatsServerMissingError';
  }
}

/** nats-server exited, or did not get ready in time; the message ends with the last lines it logged. */
export class NatsServerStartError extends Error {
  constructor(
    reason: string,
    /** The last lines nats-server wrote to stderr (its log). */
    readonly logTail: string,
  ) {
    super(logTail === '' ? reason : `${reason}; nats-server's log ends with:\n${logTail}`);
    this.name = 'NatsServerStartError';
  }
}

/**
 * The nats-server binary for the tests against a real NATS server (LOOM_NATS_SERVER). Outside CI, when it is not set,
 * the caller's tests are skipped: this prints why, naming `suite`, and returns undefined. Under CI a missing binary
 * throws NatsServerMissingError instead, so CI never skips them.
 */
export function natsServerBinary(suite: string): string | undefined {
  const binary = process.env[NATS_SERVER_ENV] || undefined;
  if (binary !== undefined) {
    if (!existsSync(binary)) throw new NatsServerMissingError(suite, `${NATS_SERVER_ENV}=${binary} names no file: ${HOW_TO_GET_IT}`);
    return binary;
  }
  const how = `${NATS_SERVER_ENV} is not set: ${HOW_TO_GET_IT}`;
  if (process.env['CI']) throw new NatsServerMissingError(suite, how);
  console.log(`${suite}: tests against a NATS server skipped: ${how}`);
  return undefined;
}

/** How a server is stopped: SIGTERM (JetStream shuts down cleanly) or, with `kill`, SIGKILL (a crash). */
export interface StopNatsServerOptions {
  readonly kill?: boolean;
}

/** A NATS server of the tests' own, on loopback, with JetStream on file storage in a temporary directory. */
export interface NatsTestServer {
  /** `nats://127.0.0.1:<port>`; the same across stop() and start(). */
  readonly url: string;
  readonly port: number;
  /** Its `server_name` in a cluster of startNatsCluster (n1, n2, …), as JetStream names a stream's leader. */
  readonly serverName?: string | undefined;
  /** JetStream's store directory (kept across stop() and start(); close() removes it). */
  readonly storeDirectory: string;
  /** The token clients must present, when the server was started with one. */
  readonly token?: string;
  /** True while the process runs and takes connections. */
  readonly running: boolean;
  /** Stops the process; the store stays. A second call waits for the first. */
  stop(options?: StopNatsServerOptions): Promise<void>;
  /** Starts the stopped server again, on the same port with the same store (a running one: nothing to do). */
  start(): Promise<void>;
  /** stop() then start(): "the server restarted mid-run". */
  restart(options?: StopNatsServerOptions): Promise<void>;
  /** Stops the process and removes its directory; a second call waits for the first. */
  close(): Promise<void>;
}

/** Options of startNatsServer. */
export interface StartNatsServerOptions {
  /** The binary; default LOOM_NATS_SERVER (NatsServerMissingError when unset). */
  readonly binary?: string;
  /** Clients must present this token. */
  readonly token?: string;
  /** How long the process may take to accept connections; default 60 s (milliseconds on an idle machine). */
  readonly readyTimeoutMs?: number;
  /** JetStream's `sync_interval`: `always` (fsync before each acknowledgement) or a duration; default nats-server's (2 min). */
  readonly syncInterval?: string;
}

/** A member of a test cluster: its name, the cluster's name and the route addresses it dials. */
interface ClusterMembership {
  readonly serverName: string;
  readonly clusterName: string;
  /** Its route port, chosen before any member starts so each can name the others. */
  readonly routePort: number;
  readonly routes: readonly string[];
}

/**
 * Starts nats-server (LOOM_NATS_SERVER) with JetStream on, its file store in a fresh temporary directory, on a free
 * loopback port. The process dies with the test process (its parent-death signal is SIGTERM), also when close() never
 * runs. One per test file (in beforeAll) is the model; stop()/start()/restart() keep the port and the store.
 */
export async function startNatsServer(options: StartNatsServerOptions = {}): Promise<NatsTestServer> {
  const binary = options.binary ?? process.env[NATS_SERVER_ENV];
  if (binary === undefined || binary === '') throw new NatsServerMissingError('startNatsServer', `${NATS_SERVER_ENV} is not set: ${HOW_TO_GET_IT}`);
  if (!existsSync(binary)) throw new NatsServerMissingError('startNatsServer', `${binary} names no file: ${HOW_TO_GET_IT}`);
  const home = await mkdtemp(join(tmpdir(), 'loom-nats-'));
  const server = new NatsProcessServer(binary, home, options);
  try {
    await server.start();
  } catch (error) {
    await server.close();
    throw error;
  }
  return server;
}

/** NATS servers of the tests' own joined in one cluster, JetStream clustered among them. */
export interface NatsTestCluster {
  readonly servers: readonly NatsTestServer[];
  /** Every server's client URL, comma-separated, as loom.messaging.nats.servers takes them. */
  readonly urls: string;
  /** Stops every server and removes their directories. */
  close(): Promise<void>;
}

/** Options of startNatsCluster. */
export interface StartNatsClusterOptions extends Omit<StartNatsServerOptions, 'token'> {
  /** Servers in the cluster; default 3 (JetStream needs a majority of them to store). */
  readonly size?: number;
}

/**
 * Starts `size` nats-servers on free loopback ports, each with its own file store, in one cluster (each member's routes
 * name the others). Each keeps its ports across stop() and start(), so a server killed and started again rejoins.
 * JetStream elects its meta leader once a majority are up; until then a stream cannot be made, so a test creates its
 * first stream with a retry.
 */
export async function startNatsCluster(options: StartNatsClusterOptions = {}): Promise<NatsTestCluster> {
  const binary = options.binary ?? process.env[NATS_SERVER_ENV];
  if (binary === undefined || binary === '') throw new NatsServerMissingError('startNatsCluster', `${NATS_SERVER_ENV} is not set: ${HOW_TO_GET_IT}`);
  if (!existsSync(binary)) throw new NatsServerMissingError('startNatsCluster', `${binary} names no file: ${HOW_TO_GET_IT}`);
  const size = options.size ?? 3;
  const clusterName = `loom-test-${process.pid}`;
  const servers: NatsProcessServer[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(servers.map((server) => server.close()));
  };
  try {
    // route ports are chosen (bound, read back, closed) before the first start: each member's routes name all the others
    const routePorts: number[] = [];
    for (let index = 0; index < size; index++) routePorts.push(await closedPort());
    const routes = routePorts.map((port) => `nats-route://127.0.0.1:${port}`);
    for (const [index, routePort] of routePorts.entries()) {
      const home = await mkdtemp(join(tmpdir(), 'loom-nats-cluster-'));
      const membership = { serverName: `n${index + 1}`, clusterName, routePort, routes: routes.filter((_, other) => other !== index) };
      servers.push(new NatsProcessServer(binary, home, options, membership));
    }
    // together: a member starts to accept clients at once, but JetStream's meta leader needs a majority
    await Promise.all(servers.map((server) => server.start()));
  } catch (error) {
    await close();
    throw error;
  }
  return { servers, urls: servers.map((server) => server.url).join(','), close };
}

/**
 * The command line that runs nats-server with `configFile`: through setpriv (util-linux), which sets the parent-death
 * signal and then runs nats-server, so no server outlives a test process that was killed.
 */
export function natsServerCommand(binary: string, configFile: string): string[] {
  return ['setpriv', '--pdeathsig', 'TERM', binary, '--config', configFile];
}

/** A string as a NATS configuration file quotes it (JSON's escapes are the same). */
function quoted(text: string): string {
  return JSON.stringify(text);
}

type ServerState = 'starting' | 'running' | 'stopping' | 'stopped' | 'closed';

const SERVER_TRANSITIONS = {
  starting: ['running', 'stopped'],
  running: ['stopping'],
  stopping: ['stopped'],
  stopped: ['starting', 'closed'],
  closed: [],
} as const satisfies Record<ServerState, readonly ServerState[]>;

const LOG_LINES_KEPT = 40;
const STOP_DEADLINE_MS = 30_000;
const LISTENING = /Listening for client connections on \S+:(\d+)\s*$/;

class NatsProcessServer implements NatsTestServer {
  private readonly lifecycle = new Lifecycle<ServerState>('the NATS test server', SERVER_TRANSITIONS, 'stopped');
  private readonly closing = new ShutdownOnce(() => this.shutdown());
  private serverProcess: ServerProcess | undefined;
  private starting: Promise<void> = Promise.resolve();
  private stopping: Promise<void> = Promise.resolve();
  // -1 asks nats-server for a free port the first time; later starts take the same one back
  private boundPort = -1;
  readonly storeDirectory: string;
  readonly token?: string;

  constructor(
    private readonly binary: string,
    private readonly home: string,
    private readonly options: StartNatsServerOptions,
    private readonly cluster?: ClusterMembership,
  ) {
    this.storeDirectory = join(home, 'jetstream');
    if (options.token !== undefined) this.token = options.token;
  }

  get port(): number {
    return this.boundPort;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.boundPort}`;
  }

  get serverName(): string | undefined {
    return this.cluster?.serverName;
  }

  get running(): boolean {
    return this.lifecycle.is('running');
  }

  start(): Promise<void> {
    if (this.lifecycle.is('running')) return Promise.resolve();
    if (!this.lifecycle.is('starting')) {
      this.lifecycle.to('starting');
      this.starting = this.launch();
    }
    // a second caller waits for the start under way
    return this.starting;
  }

  stop(options: StopNatsServerOptions = {}): Promise<void> {
    if (this.lifecycle.is('running')) {
      this.lifecycle.to('stopping');
      const serverProcess = this.serverProcess!;
      this.serverProcess = undefined;
      this.stopping = serverProcess.stop(options.kill === true).finally(() => this.lifecycle.to('stopped'));
    }
    // a second caller waits for the stop under way
    return this.lifecycle.is('stopping') ? this.stopping : Promise.resolve();
  }

  async restart(options: StopNatsServerOptions = {}): Promise<void> {
    await this.stop(options);
    await this.start();
  }

  close(): Promise<void> {
    return this.closing.call();
  }

  private async launch(): Promise<void> {
    let serverProcess: ServerProcess | undefined;
    try {
      // the token goes in a file of the server's own directory, never on the command line where any local user reads it
      const configFile = join(this.home, 'nats-server.conf');
      const syncInterval = this.options.syncInterval === undefined ? '' : `, sync_interval: ${quoted(this.options.syncInterval)}`;
      const cluster = this.cluster;
      const lines = [
        `listen: ${quoted(`127.0.0.1:${this.boundPort}`)}`,
        `jetstream { store_dir: ${quoted(this.storeDirectory)}${syncInterval} }`,
        ...(this.token === undefined ? [] : [`authorization { token: ${quoted(this.token)} }`]),
        ...(cluster === undefined
          ? []
          : [
              `server_name: ${quoted(cluster.serverName)}`,
              `cluster { name: ${quoted(cluster.clusterName)}, listen: ${quoted(`127.0.0.1:${cluster.routePort}`)}, routes: [${cluster.routes.map(quoted).join(', ')}] }`,
            ]),
      ];
      await writeFile(configFile, `${lines.join('\n')}\n`, { mode: 0o600 });
      const [command, ...args] = natsServerCommand(this.binary, configFile);
      serverProcess = new ServerProcess(spawn(command!, args, { stdio: ['ignore', 'ignore', 'pipe'] }));
      this.boundPort = await serverProcess.ready(this.options.readyTimeoutMs ?? 60_000);
    } catch (error) {
      await serverProcess?.stop(true);
      this.lifecycle.to('stopped');
      throw error;
    }
    this.serverProcess = serverProcess;
    this.lifecycle.to('running');
  }

  private async shutdown(): Promise<void> {
    // a start under way finishes (or fails) first, so its process is stopped too
    await this.starting.catch(() => undefined);
    await this.stop();
    this.lifecycle.to('closed');
    await rm(this.home, { recursive: true, force: true });
  }
}

/** One run of nats-server: its log (stderr) read as lines, the tail kept for errors. */
class ServerProcess {
  private readonly log: string[] = [];
  private port: number | undefined;
  private isReady = false;
  private readonly wakeup = new Wakeup();
  private ended: string | undefined;
  private readonly exited: Promise<void>;

  constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stderr! }).on('line', (line) => {
      this.log.push(line);
      if (this.log.length > LOG_LINES_KEPT) this.log.shift();
      const listening = LISTENING.exec(line);
      if (listening !== null) this.port = Number(listening[1]);
      if (line.endsWith('Server is ready')) this.isReady = true;
      this.wakeup.wake();
    });
    this.exited = new Promise((resolve) => {
      child.once('error', (error) => {
        this.ended = `cannot run setpriv and nats-server: ${error.message}`;
        resolve();
        this.wakeup.wake();
      });
      child.once('close', (code, signal) => {
        this.ended = `nats-server ended (${signal === null ? `exit code ${code}` : `signal ${signal}`})`;
        resolve();
        this.wakeup.wake();
      });
    });
  }

  /** The port once the server says it is ready; NatsServerStartError when it ends or `timeoutMs` passes first. */
  async ready(timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.isReady && this.port !== undefined) return this.port;
      if (this.ended !== undefined) throw new NatsServerStartError(`${this.ended} while starting`, this.log.join('\n'));
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new NatsServerStartError(`nats-server was not ready within ${timeoutMs / 1000} s`, this.log.join('\n'));
      await this.wakeup.wait(remaining);
    }
  }

  /** Sends SIGTERM (or SIGKILL) and waits for the exit; SIGKILL after a deadline. */
  async stop(kill: boolean): Promise<void> {
    if (this.ended !== undefined) return;
    this.child.kill(kill ? 'SIGKILL' : 'SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_DEADLINE_MS);
    await this.exited;
    clearTimeout(timer);
  }
}
