/** Test helpers for graph stores (`@loom/graph/testing`): a proxy that resets connections for real, and a Neo4j driver that records what crosses its boundary. */
import { type AddressInfo, createServer, connect, type Server, type Socket } from 'node:net';
import { type AuthToken, type Config, type Record as Neo4jRecord } from 'neo4j-driver';
import {
  type Neo4jDriverFactory,
  type Neo4jDriverLike,
  type Neo4jRecordLike,
  type Neo4jSessionConfig,
  type Neo4jSessionLike,
  type Neo4jTransactionLike,
} from './neo4j-store.js';

/**
 * A loopback TCP proxy in front of a server that can reset connections for real (TCP RST), so a client sees the
 * ECONNRESET a dying server or network gives it, not a mocked error.
 */
export class FaultProxy {
  private armed = 0;
  private readonly sockets = new Set<Socket>();
  /** Connections reset so far. */
  resets = 0;
  /** Connections accepted so far. */
  accepted = 0;

  private constructor(
    private readonly server: Server,
    readonly host: string,
    readonly port: number,
  ) {}

  /** Starts a proxy on 127.0.0.1, port 0, forwarding to target. */
  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    const started: { proxy?: FaultProxy } = {};
    const server = createServer((client) => started.proxy!.accept(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // a TCP server listening on a port always has an AddressInfo
    const { port } = server.address() as AddressInfo;
    started.proxy = new FaultProxy(server, '127.0.0.1', port);
    return started.proxy;
  }

  /** The next `count` chunks a client sends (a startup packet or a query) reset that client's connection instead of arriving. */
  resetNext(count: number): void {
    this.armed += count;
  }

  /** Stops listening and destroys every open connection. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    this.accepted++;
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined); // a reset peer; the other side is torn down below
    }
    client.on('data', (chunk) => {
      if (this.armed > 0) {
        this.armed--;
        this.resets++;
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }
}

/** One statement that crossed the driver boundary. */
export interface SentStatement {
  readonly via: 'auto-commit' | 'transaction';
  readonly database: string | undefined;
  readonly accessMode: 'READ' | 'WRITE';
  /** Single sign-on: the impersonated user, or the scheme and principal of the session's own credentials. */
  readonly impersonatedUser?: string;
  readonly sessionAuth?: { readonly scheme: string; readonly principal?: string };
  readonly query: string;
  readonly parameters: Record<string, unknown>;
}

/** What the fake server answers to one statement: records, or an error thrown while they are read. */
export type Answer = (query: string, parameters: Record<string, unknown>) => Neo4jRecord[] | Error;

/**
 * A fake neo4j-driver that implements the small driver surface the adapter uses and records everything sent through
 * it: the driver's construction (url, auth, config), sessions with their database and access mode, statements,
 * transaction boundaries and closes.
 */
export class RecordingDriver implements Neo4jDriverLike {
  readonly created: { url: string; auth: AuthToken; config: Config }[] = [];
  readonly sent: SentStatement[] = [];
  readonly events: string[] = [];
  private answer: Answer = () => [];

  /** A driverFactory that returns this driver and records how it was made. */
  readonly factory: Neo4jDriverFactory = (url, auth, config) => {
    this.created.push({ url, auth, config });
    return this;
  };

  /** Sets what the following statements get back. */
  answerWith(answer: Answer): void {
    this.answer = answer;
  }

  session(config: Neo4jSessionConfig): Neo4jSessionLike {
    const { database, defaultAccessMode: accessMode, impersonatedUser } = config;
    this.events.push(`session ${accessMode} ${database ?? '(home)'}${impersonatedUser === undefined ? '' : ` as ${impersonatedUser}`}`);
    const sso = {
      ...(impersonatedUser === undefined ? {} : { impersonatedUser }),
      ...(config.auth === undefined
        ? {}
        : { sessionAuth: { scheme: config.auth.scheme, ...(config.auth.principal === undefined ? {} : { principal: config.auth.principal }) } }),
    };
    const statement = (via: SentStatement['via'], query: string, parameters: Record<string, unknown>): AsyncIterable<Neo4jRecordLike> => {
      this.sent.push({ via, database, accessMode, ...sso, query, parameters });
      const answer = this.answer(query, parameters);
      return (async function* () {
        await Promise.resolve(); // the driver reads records asynchronously, and reports failures while reading
        if (answer instanceof Error) throw answer;
        yield* answer;
      })();
    };
    return {
      run: (query, parameters) => statement('auto-commit', query, parameters),
      beginTransaction: (): Neo4jTransactionLike => {
        this.events.push('begin');
        return {
          run: (query, parameters) => statement('transaction', query, parameters),
          commit: () => {
            this.events.push('commit');
            return Promise.resolve();
          },
          rollback: () => {
            this.events.push('rollback');
            return Promise.resolve();
          },
        };
      },
      close: () => {
        this.events.push('close session');
        return Promise.resolve();
      },
    };
  }

  close(): Promise<void> {
    this.events.push('close driver');
    return Promise.resolve();
  }
}
