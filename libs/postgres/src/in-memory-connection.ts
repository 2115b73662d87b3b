import { Duplex } from 'node:stream';
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions, type PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { Lifecycle, ShutdownOnce } from '@loom/foundation';
import { EmbeddedPostgresStartError } from './errors.js';

/**
 * A connection that is not TCP, with the socket methods `pg` (its Client's `stream` option) and pglite-socket's
 * handler call, so that each sees the other as it would see a TCP peer: this thread's InMemorySocket, and the
 * main thread's end of a connection to an embedded server in a worker thread (embedded-in-worker.ts).
 */
export abstract class SocketStandIn extends Duplex {
  constructor() {
    // like a server's net.Socket: when the other end stops writing, this end finishes too and both close
    super({ allowHalfOpen: false });
  }

  /** Called by pg's Connection (with the URL's port and host, which a connection that is not TCP does not need). */
  abstract connect(): this;

  setNoDelay(): this {
    return this; // nothing is buffered on the way
  }

  setKeepAlive(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }

  override _read(): void {
    // the other end's bytes are pushed as they arrive; there is nothing to fetch
  }

  /** Fails the connection as a TCP connection to a stopped server fails: ECONNREFUSED, after `connect` has returned. */
  refuse(): void {
    const refused = Object.assign(new Error('connect ECONNREFUSED: the embedded PostgreSQL is stopping'), { code: 'ECONNREFUSED' });
    process.nextTick(() => this.destroy(refused));
  }
}

/**
 * One end of a connection inside the process: what is written to it arrives as the other end's 'data', ending it ends
 * the other end's reading, destroying it closes both.
 */
class InMemorySocket extends SocketStandIn {
  private peer: InMemorySocket | undefined;
  private peerEnded = false;

  constructor(private readonly onConnect: (socket: InMemorySocket) => void = () => undefined) {
    super();
  }

  /** Joins two ends. */
  static pair(client: InMemorySocket, server: InMemorySocket): void {
    client.peer = server;
    server.peer = client;
  }

  connect(): this {
    this.onConnect(this);
    return this;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const peer = this.peer;
    if (peer !== undefined && !peer.destroyed && !this.peerEnded) peer.push(chunk);
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.endPeer();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // a TCP peer sees end of stream when the other side goes; no error, as with a socket closed without a reset
    const peer = this.peer;
    if (peer !== undefined && !peer.destroyed) peer.destroy();
    callback(error);
  }

  private endPeer(): void {
    if (this.peerEnded) return;
    this.peerEnded = true;
    if (this.peer !== undefined && !this.peer.destroyed) this.peer.push(null);
  }
}

/** pglite-socket's one queue of frontend messages, shared by all connections of a server; not among its exports. */
type QueryQueue = PGLiteSocketHandlerOptions['queryQueue'];

/** How many connections a server has taken, by the way they came. */
export interface EmbeddedConnectionCounts {
  /** TCP connections accepted since start (psql, other processes, pg clients given the URL without createPool). */
  readonly tcpAccepted: number;
  /** Connections in memory opened since start (pools of this process, see createPool). */
  readonly inMemoryOpened: number;
  /** Connections in memory open now. */
  readonly inMemoryOpen: number;
}

type ConnectorState = 'serving' | 'closing' | 'closed';

const CONNECTOR_TRANSITIONS = {
  serving: ['closing'],
  closing: ['closed'],
  closed: [],
} as const satisfies Record<ConnectorState, readonly ConnectorState[]>;

/**
 * Connections in memory to an embedded server of this process: each is a pglite-socket handler like the ones its TCP
 * server makes, on the server's own queue, so they take turns on PGlite's one session with the TCP connections by the
 * same rules (per request and per transaction, withSessionAffinity), with the same startup, SSL and error answers.
 */
export class InMemoryConnector {
  private readonly lifecycle: Lifecycle<ConnectorState>;
  private readonly handlers = new Set<PGLiteSocketHandler>();
  private readonly queryQueue: QueryQueue;
  private tcpAccepted = 0;
  private opened = 0;
  private readonly shutdown = new ShutdownOnce(() => this.closeHandlers());

  /** Takes the queue of `server` (whose TCP connections it counts too); `dataDir` names the server in errors. */
  constructor(server: PGLiteSocketServer, dataDir: string) {
    this.lifecycle = new Lifecycle(`in-memory connections of the embedded PostgreSQL on ${dataDir}`, CONNECTOR_TRANSITIONS, 'serving');
    // private in pglite-socket 0.2.17 (pinned): the queue every connection of the server must share, or a transaction
    // of one would not hold off the others
    const queryQueue = (server as unknown as { queryQueue?: QueryQueue }).queryQueue;
    if (queryQueue === undefined || typeof queryQueue.enqueue !== 'function') {
      throw new EmbeddedPostgresStartError(dataDir, 'this pglite-socket has no query queue to serve connections in memory on');
    }
    this.queryQueue = queryQueue;
    // the server announces only the connections it accepted itself, that is the TCP ones
    server.addEventListener('connection', () => {
      this.tcpAccepted++;
    });
  }

  /** How many connections were taken, by the way they came. */
  counts(): EmbeddedConnectionCounts {
    return { tcpAccepted: this.tcpAccepted, inMemoryOpened: this.opened, inMemoryOpen: this.handlers.size };
  }

  /**
   * A new connection's client end, for pg's `stream` option: it connects when pg calls `connect`. Once the connector
   * is closing, connecting fails with ECONNREFUSED, as a TCP connection to a stopped server does.
   */
  open(): SocketStandIn {
    return new InMemorySocket((client) => this.attach(client));
  }

  /** Ends every connection in memory (rolling back a transaction one left open); a second call waits for the first. */
  close(): Promise<void> {
    return this.shutdown.call();
  }

  private attach(client: InMemorySocket): void {
    if (!this.lifecycle.is('serving')) {
      client.refuse();
      return;
    }
    const server = new InMemorySocket();
    InMemorySocket.pair(client, server);
    const handler = new PGLiteSocketHandler({ queryQueue: this.queryQueue, closeOnDetach: true });
    this.handlers.add(handler);
    this.opened++;
    const forget = (): void => {
      this.handlers.delete(handler);
    };
    handler.addEventListener('close', forget);
    handler.addEventListener('error', forget);
    // attach is synchronous up to its end; pg listens for 'connect' only after `connect` returns
    void handler.attach(server as unknown as Parameters<PGLiteSocketHandler['attach']>[0]);
    process.nextTick(() => {
      if (!client.destroyed) client.emit('connect');
    });
  }

  private async closeHandlers(): Promise<void> {
    this.lifecycle.to('closing');
    const handlers = [...this.handlers];
    this.handlers.clear();
    await Promise.all(handlers.map((handler) => handler.detach(true)));
    this.lifecycle.to('closed');
  }
}
