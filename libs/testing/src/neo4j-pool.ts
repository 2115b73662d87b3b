import { createServer, type Server, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { type Neo4jTestServer, startNeo4j } from './neo4j.js';

/** A test run's pool of Neo4j servers: where it lends them, and how to stop it with every server it started. */
export interface Neo4jPool {
  /** `127.0.0.1:<port>`, for LOOM_NEO4J_POOL. */
  readonly address: string;
  /** How many servers it has started so far. */
  readonly started: number;
  /** How many of them are back, emptied, and free to lend. */
  readonly idle: number;
  /** Ends every loan and stops every server; a second call waits for the first. */
  close(): Promise<void>;
}

/**
 * Starts a pool that lends Neo4j servers to the test files of one run (startNeo4j borrows from it when LOOM_NEO4J_POOL
 * names it). A connection is a loan: the pool answers it with a free server's coordinates as one JSON line, starting a
 * server when none is free, and holds that server for the borrower until the connection closes, which also happens when
 * the borrower's process dies; then it empties the server and lends it again. A line `CLEAR` empties it during the loan
 * (answered `CLEARED`, or `FAILED <reason>`). So a run starts as many JVMs as files used Neo4j at once, not one a file.
 */
export async function startNeo4jPool(): Promise<Neo4jPool> {
  const lender = new Lender();
  const listener = createServer((socket) => void lender.serve(socket));
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = listener.address() as { port: number };
  return {
    address: `127.0.0.1:${port}`,
    get started() {
      return lender.started.length;
    },
    get idle() {
      return lender.free.length;
    },
    close: () => lender.close(listener),
  };
}

function reasonOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/\n/g, ' ');
}

/** The pool's servers and loans. */
class Lender {
  readonly free: Neo4jTestServer[] = [];
  readonly started: Promise<Neo4jTestServer>[] = [];
  private readonly loans = new Set<Socket>();
  private closing: Promise<void> | undefined;

  /** One loan, for as long as the connection stays open. */
  async serve(socket: Socket): Promise<void> {
    this.loans.add(socket);
    socket.on('error', () => undefined);
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    let server: Neo4jTestServer;
    try {
      server = await this.lend();
    } catch (error) {
      socket.end(`FAILED ${reasonOf(error)}\n`);
      this.loans.delete(socket);
      return;
    }
    if (!socket.destroyed) {
      socket.write(`${JSON.stringify({ uri: server.uri, user: server.user, password: server.password, home: server.home, pid: server.pid })}\n`);
      const commands = createInterface({ input: socket });
      // a borrower that died resets its connection: that ends the loan (close), it is not the pool's failure
      commands.on('error', () => undefined);
      commands.on('line', (line) => {
        if (line !== 'CLEAR') socket.write(`FAILED unknown command ${line}\n`);
        else
          server.clear().then(
            () => socket.write('CLEARED\n'),
            (error: unknown) => socket.write(`FAILED ${reasonOf(error)}\n`),
          );
      });
      await ended;
    }
    this.loans.delete(socket);
    await this.takeBack(server);
  }

  close(listener: Server): Promise<void> {
    this.closing ??= (async () => {
      await new Promise<void>((resolve) => {
        listener.close(() => resolve());
        for (const socket of this.loans) socket.destroy();
      });
      const servers = await Promise.allSettled(this.started);
      await Promise.all(servers.map(async (settled) => (settled.status === 'fulfilled' ? settled.value.close() : undefined)));
    })();
    return this.closing;
  }

  private lend(): Promise<Neo4jTestServer> {
    const server = this.free.pop();
    if (server !== undefined) return Promise.resolve(server);
    const starting = startNeo4j({ own: true });
    this.started.push(starting);
    return starting;
  }

  /** Takes a server back, emptied; one that cannot be emptied, or that comes back while the pool closes, is stopped. */
  private async takeBack(server: Neo4jTestServer): Promise<void> {
    try {
      await server.clear();
      if (this.closing === undefined) this.free.push(server);
      else await server.close();
    } catch {
      await server.close();
    }
  }
}
