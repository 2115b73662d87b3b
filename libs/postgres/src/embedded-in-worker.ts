import { type Duplex } from 'node:stream';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { Lifecycle, type TransitionTable, WORKER_EXEC_ARGV } from '@loom/foundation';
import { lockDataDir } from './data-dir-lock.js';
import { type EmbeddedPostgres, type EmbeddedPostgresOptions, embeddedUrl, errorText, prepareDataDir } from './embedded-postgres.js';
import { registerEmbeddedAddress } from './embedded-registry.js';
import { EmbeddedPostgresStartError } from './errors.js';
import { SocketStandIn } from './in-memory-connection.js';
import { type FromWorker, postChunk, receivedChunk, TCP_ACCEPTED, type ToWorker, type WorkerStart } from './worker-server.js';

/** The package's own worker module: PGlite without extensions. */
const PLAIN_ENTRY = new URL('../dist/embedded-worker-entry.js', import.meta.url);

/** Options of startEmbeddedPostgresInWorker: those of startEmbeddedPostgres, the extensions given by the worker's module. */
export interface EmbeddedWorkerOptions extends Omit<EmbeddedPostgresOptions, 'extensions'> {
  /**
   * The worker's module, built JavaScript that calls serveEmbeddedPostgresWorker (`@loom/postgres/worker`) with the
   * extensions PGlite loads (they are modules, which cannot be sent to a thread); default this package's, with none.
   */
  readonly entry?: URL;
}

type WorkerState = 'starting' | 'running' | 'closing' | 'closed';

const TRANSITIONS: TransitionTable<WorkerState> = {
  starting: ['running', 'closed'],
  running: ['closing', 'closed'],
  closing: ['closed'],
  closed: [],
};

/**
 * startEmbeddedPostgres with PGlite in a worker thread of its own: the same server (TCP on loopback, connections in
 * memory for createPool's pools of this process, the same turns on PGlite's one session), but its statements, which
 * run synchronously in WebAssembly, no longer hold up the process's event loop (gRPC, HTTP, timers) while they run.
 * The data directory's lock is taken here and kept until the thread has ended. Should the thread die, its connections
 * end with an error and new ones are refused; close() still settles.
 */
export async function startEmbeddedPostgresInWorker(options: EmbeddedWorkerOptions): Promise<EmbeddedPostgres> {
  const { host, dataDir } = await prepareDataDir(options);
  const lock = lockDataDir(dataDir);
  const counters = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
  const start: WorkerStart = {
    host,
    dataDir,
    counters,
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.sharedBuffers === undefined ? {} : { sharedBuffers: options.sharedBuffers }),
    ...(options.templateDir === undefined ? {} : { templateDir: options.templateDir }),
    ...(options.rememberPort === undefined ? {} : { rememberPort: options.rememberPort }),
  };
  let worker: Worker;
  try {
    worker = new Worker(options.entry ?? PLAIN_ENTRY, {
      workerData: start,
      ...(WORKER_EXEC_ARGV === undefined ? {} : { execArgv: [...WORKER_EXEC_ARGV] }),
    });
  } catch (error) {
    lock.release();
    throw new EmbeddedPostgresStartError(dataDir, `cannot start its worker thread: ${errorText(error)}`, { cause: error });
  }
  return new WorkerServer(worker, host, dataDir, counters, options.logger, () => lock.release()).started();
}

/** The main thread's handle on a worker's embedded PostgreSQL. */
class WorkerServer implements EmbeddedPostgres {
  private readonly lifecycle: Lifecycle<WorkerState>;
  private readonly exited: Promise<void>;
  private readonly counters: Int32Array;
  private readonly sockets = new Set<WorkerSocket>();
  private opened = 0;
  private serverPort = 0;
  private unregister: () => void = () => undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly worker: Worker,
    readonly host: string,
    readonly dataDir: string,
    counters: SharedArrayBuffer,
    private readonly logger: EmbeddedPostgresOptions['logger'],
    release: () => void,
  ) {
    this.lifecycle = new Lifecycle(`embedded PostgreSQL on ${dataDir} (worker thread)`, TRANSITIONS, 'starting');
    this.counters = new Int32Array(counters);
    this.exited = new Promise((resolve) => {
      worker.once('exit', () => {
        release();
        resolve();
      });
    });
  }

  get port(): number {
    return this.serverPort;
  }

  get url(): string {
    return embeddedUrl(this.host, this.serverPort);
  }

  /** Resolves with this server once the worker serves, or rejects with why it could not start (the thread ended). */
  started(): Promise<this> {
    return new Promise((resolve, reject) => {
      let failed = false;
      // the first reason wins: a failure the worker reports is followed by its exit
      const fail = (error: Error): void => {
        if (failed) return;
        failed = true;
        if (this.lifecycle.is('starting')) this.lifecycle.to('closed');
        void this.worker.terminate().then(() => this.exited.then(() => reject(error)));
      };
      this.worker.on('message', (message: FromWorker) => {
        switch (message.kind) {
          case 'started':
            this.serverPort = message.port;
            this.lifecycle.to('running');
            this.unregister = registerEmbeddedAddress(this.host, message.port, () => this.connect());
            resolve(this);
            return;
          case 'failed':
            fail(this.startError(message));
            return;
          case 'log':
            this.logger?.[message.level](message.fields, message.message);
            return;
          case 'closed':
            // the server is closed and PGlite flushed: nothing of the thread is left to wait for
            void this.worker.terminate();
            return;
        }
      });
      this.worker.on('error', (error) => {
        if (this.lifecycle.is('starting')) {
          fail(new EmbeddedPostgresStartError(this.dataDir, `its worker thread failed: ${error.message}`, { cause: error }));
          return;
        }
        this.logger?.warn({ err: { name: error.name, message: error.message }, dataDir: this.dataDir }, 'the embedded PostgreSQL worker thread failed');
      });
      void this.exited.then(() => {
        if (this.lifecycle.is('starting')) fail(new EmbeddedPostgresStartError(this.dataDir, 'its worker thread ended before it served'));
        else if (this.lifecycle.is('running')) this.ended();
      });
    });
  }

  connectionCounts(): { tcpAccepted: number; inMemoryOpened: number; inMemoryOpen: number } {
    return { tcpAccepted: Atomics.load(this.counters, TCP_ACCEPTED), inMemoryOpened: this.opened, inMemoryOpen: this.sockets.size };
  }

  /** Asks the worker to close the server (connections, TCP, PGlite flushed) and waits for the thread to end; safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.lifecycle.is('running')) {
        this.lifecycle.to('closing');
        this.unregister();
        this.post({ kind: 'close' });
      }
      await this.exited;
      if (!this.lifecycle.is('closed')) this.lifecycle.to('closed');
      this.logger?.info({ dataDir: this.dataDir }, 'embedded PostgreSQL worker thread ended');
    })();
    return this.closing;
  }

  /** A new connection in memory's client end (for pg's `stream` option); it reaches the worker when pg connects it. */
  private connect(): Duplex {
    return new WorkerSocket((socket) => {
      if (!this.lifecycle.is('running')) return false;
      const channel = new MessageChannel();
      this.post({ kind: 'connect', port: channel.port2 }, [channel.port2]);
      this.opened++;
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      return channel.port1;
    });
  }

  /** The thread ended while serving: its connections are gone, new ones are refused. */
  private ended(): void {
    this.lifecycle.to('closed');
    this.unregister();
    this.logger?.warn({ dataDir: this.dataDir }, 'the embedded PostgreSQL worker thread ended while serving; its connections are closed');
    for (const socket of this.sockets) socket.destroy(new Error(`the embedded PostgreSQL on ${this.dataDir} ended (its worker thread is gone)`));
  }

  private post(message: ToWorker, transfer: MessagePort[] = []): void {
    this.worker.postMessage(message, transfer);
  }

  private startError(message: Extract<FromWorker, { kind: 'failed' }>): Error {
    return new EmbeddedPostgresStartError(this.dataDir, message.reason ?? `${message.name}: ${message.message}`);
  }
}

/** The main thread's end of a connection in memory to a worker's server: its bytes cross a MessagePort. */
class WorkerSocket extends SocketStandIn {
  private port: MessagePort | undefined;

  /** `open` answers the port of a new connection, or false when the server takes none. */
  constructor(private readonly open: (socket: WorkerSocket) => MessagePort | false) {
    super();
  }

  connect(): this {
    const port = this.open(this);
    if (port === false) {
      this.refuse();
      return this;
    }
    this.port = port;
    port.on('message', (chunk: Uint8Array | null) => this.push(receivedChunk(chunk)));
    port.on('close', () => this.destroy());
    // messages on the port are queued until the worker takes it, so pg may write as soon as it hears this
    process.nextTick(() => {
      if (!this.destroyed) this.emit('connect');
    });
    return this;
  }

  override ref(): this {
    this.port?.ref();
    return this;
  }

  override unref(): this {
    this.port?.unref();
    return this;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.port !== undefined) postChunk(this.port, chunk);
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.port !== undefined) postChunk(this.port, null);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.port?.close();
    callback(error);
  }
}
