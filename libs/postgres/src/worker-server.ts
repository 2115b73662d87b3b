// The worker-thread side of startEmbeddedPostgresInWorker: PGlite, its TCP server and its connections in memory run
// here, so its statements (WebAssembly, synchronous) take this thread's time and not the event loop of the process's
// main thread. Call serveEmbeddedPostgresWorker once from the worker's module, with the extensions PGlite loads.
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { type Extensions } from '@electric-sql/pglite';
import { NotInWorkerError } from '@loom/foundation/worker';
import { type EmbeddedPostgresLogger, type ServedEmbeddedPostgres, serveLockedDataDir } from './embedded-postgres.js';
import { EmbeddedPostgresStartError } from './errors.js';
import { type SocketStandIn } from './in-memory-connection.js';

/** What the main thread gives the worker as its `workerData`: the prepared options, the directory already locked. */
export interface WorkerStart {
  readonly host: string;
  readonly dataDir: string;
  readonly port?: number;
  readonly sharedBuffers?: string;
  readonly templateDir?: string;
  readonly rememberPort?: { readonly setting: string };
  /** Counters the worker writes and the main thread reads: [0] TCP connections accepted. */
  readonly counters: SharedArrayBuffer;
}

/** Index of the TCP connections accepted in WorkerStart.counters. */
export const TCP_ACCEPTED = 0;

/** Messages from the main thread. */
export type ToWorker =
  /** A new connection in memory: its bytes cross on `port`, a `null` ends it. */
  { readonly kind: 'connect'; readonly port: MessagePort } | { readonly kind: 'close' };

/** Messages to the main thread. */
export type FromWorker =
  | { readonly kind: 'started'; readonly port: number }
  | { readonly kind: 'failed'; readonly name: string; readonly message: string; readonly reason: string | undefined }
  | { readonly kind: 'log'; readonly level: 'info' | 'warn'; readonly fields: Record<string, unknown>; readonly message: string }
  | { readonly kind: 'closed' };

/** A chunk of a connection's bytes as it crosses threads: copied once into a buffer of its own, which is then moved. */
export function postChunk(port: MessagePort, chunk: Uint8Array | null): void {
  if (chunk === null) {
    port.postMessage(null);
    return;
  }
  const copy = new Uint8Array(chunk);
  port.postMessage(copy, [copy.buffer]);
}

/** A chunk as postChunk sent it: its bytes as a Buffer (no copy), or null for the end. */
export function receivedChunk(chunk: Uint8Array | null): Buffer | null {
  return chunk === null ? null : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/** A log entry's fields as they can cross threads: an error becomes its name and message. */
function crossable(fields: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, value instanceof Error ? { name: value.name, message: value.message } : value]));
}

/** Joins a connection in memory to the port its bytes cross on; either end closing closes the other. */
function bridge(socket: SocketStandIn, port: MessagePort): void {
  let open = true;
  const end = (): void => {
    if (!open) return;
    open = false;
    port.close();
    socket.destroy();
  };
  socket.on('data', (chunk: Buffer) => postChunk(port, chunk));
  socket.on('end', () => {
    if (open) postChunk(port, null);
  });
  socket.on('close', end);
  socket.on('error', end);
  port.on('message', (chunk: Uint8Array | null) => {
    const bytes = receivedChunk(chunk);
    if (bytes === null) socket.end();
    else socket.write(bytes);
  });
  port.on('close', end);
  // pg's Connection (on the main thread) writes its startup message once it hears `connect`; the handler answers it
  socket.connect();
}

/** Serves the embedded PostgreSQL of the worker's workerData to the main thread; see startEmbeddedPostgresInWorker. */
export function serveEmbeddedPostgresWorker(extensions?: Extensions): void {
  const main = parentPort;
  if (main === null) throw new NotInWorkerError('serveEmbeddedPostgresWorker', 'startEmbeddedPostgresInWorker');
  const start = workerData as WorkerStart;
  const counters = new Int32Array(start.counters);
  const post = (message: FromWorker): void => main.postMessage(message);
  const logger: EmbeddedPostgresLogger = {
    info: (fields, message) => post({ kind: 'log', level: 'info', fields: crossable(fields), message }),
    warn: (fields, message) => post({ kind: 'log', level: 'warn', fields: crossable(fields), message }),
  };
  void (async () => {
    let server: ServedEmbeddedPostgres;
    try {
      server = await serveLockedDataDir(
        { ...start, ...(extensions === undefined ? {} : { extensions }), logger },
        // the lock is the main thread's, given up when this thread has ended
        { release: () => undefined, onTcpAccepted: () => Atomics.add(counters, TCP_ACCEPTED, 1) },
      );
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      post({
        kind: 'failed',
        name: failure.name,
        message: failure.message,
        reason: failure instanceof EmbeddedPostgresStartError ? failure.reason : undefined,
      });
      main.close();
      return;
    }
    const served = server;
    main.on('message', (message: ToWorker) => {
      if (message.kind === 'connect') {
        bridge(served.openInMemory(), message.port);
        return;
      }
      void served.close().finally(() => {
        post({ kind: 'closed' });
        main.close();
      });
    });
    post({ kind: 'started', port: server.port });
  })();
}
