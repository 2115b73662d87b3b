import { ValidationError } from '@loom/domain';
import { ShutdownOnce } from '@loom/foundation';
import { Socket } from 'node:net';
import pg from 'pg';
import { parseDatabaseUrl, redactPassword } from './connection-url.js';
import { embeddedConnect, isEmbeddedAddress } from './embedded-registry.js';
import { DatabaseUnavailableError } from './errors.js';

/** Options of createPool. */
export interface PoolOptions {
  /** Most connections open at once; default 10. An embedded database takes one per pool (anything else is refused). */
  readonly max?: number;
  /**
   * The URL is an embedded PostgreSQL; default: true when this process serves that address. A pool on an embedded server
   * of this process connects to it in memory (no socket), to any other over TCP.
   */
  readonly embedded?: boolean;
  /** `application_name` of the connections (shows in pg_stat_activity). */
  readonly applicationName?: string;
  /** Server-side `statement_timeout` of every connection; not sent to an embedded database (PGlite does not enforce it). */
  readonly statementTimeoutMs?: number;
  /** Told when a connection fails while nobody is using it (the pool replaces it). */
  readonly logger?: { warn(obj: object, msg: string): void };
}

/** A pool of PostgreSQL connections with transactions; connection failures are DatabaseUnavailableError. */
export interface Database {
  /** Runs one statement (with `$1`… parameters) on a pooled connection. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[]): Promise<pg.QueryResult<R>>;
  /** Runs fn between BEGIN and COMMIT on one connection, with ROLLBACK when it throws; the connection is always released. */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  /**
   * Closes the pool once its checked-out connections are released; statements still waiting for a connection, and any
   * after, fail with DatabaseUnavailableError. A second call waits for the first.
   */
  close(): Promise<void>;
  /** The underlying pg pool. */
  readonly pool: pg.Pool;
}

const DEFAULT_MAX = 10;
const CONNECT_TIMEOUT_MS = 10_000;
/** Node's error codes of a connection that failed or went away: the server may answer again later. */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// SQLSTATE: class 08 connection exception, admin/crash shutdown, cannot connect now, too many connections
const UNAVAILABLE_SQLSTATES = /^(08...|57P0[123]|53300)$/;
const CONNECTION_LOST_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|not queryable|Cannot use a pool after calling end/i;

/**
 * Opens a pool on a PostgreSQL URL (nothing connects until the first query). For an embedded database the pool has one
 * connection: PGlite has a single session, and queuing in the pool keeps concurrent work from waiting on the server.
 * When this process serves that embedded database, the connection is in memory: the same wire protocol and turns on the
 * session as over TCP, without a socket each way.
 */
export function createPool(url: string, options: PoolOptions = {}): Database {
  const target = parseDatabaseUrl(url);
  const embedded = options.embedded ?? isEmbeddedAddress(target.host, target.port);
  if (embedded && options.max !== undefined && options.max !== 1) {
    throw ValidationError.of('max', 'a pool on the embedded PostgreSQL has exactly one connection (PGlite has one session)');
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: embedded ? 1 : (options.max ?? DEFAULT_MAX),
    // waiting for the single embedded connection is queuing, not a failure; a real server that does not answer is
    connectionTimeoutMillis: embedded ? 0 : CONNECT_TIMEOUT_MS,
    ...(options.applicationName === undefined ? {} : { application_name: options.applicationName }),
    ...(options.statementTimeoutMs === undefined || embedded ? {} : { statement_timeout: options.statementTimeoutMs }),
    // asked at each new connection, so a server started or stopped in this process after the pool is seen: in memory
    // while this process serves the address, a TCP socket (what pg makes itself) otherwise
    ...(embedded ? { stream: () => embeddedConnect(target.host, target.port)?.() ?? new Socket() } : {}),
  });

  const unavailable = (error: unknown): DatabaseUnavailableError => {
    const reason = redactPassword(error instanceof Error ? error.message : String(error), target.password);
    return new DatabaseUnavailableError(target.address, reason, { cause: error });
  };
  const warnIdleFailure = (error: Error): void => {
    options.logger?.warn({ address: target.address, reason: redactPassword(error.message, target.password) }, 'database connection failed while idle');
  };
  // Every connection has the listener for its whole life: without one, a connection that dies while nobody is using it
  // (idle in the pool, checked out between queries, or in the moment between the pool handing it over and the caller's
  // first query) would crash the process.
  pool.on('connect', (client) => client.on('error', warnIdleFailure));
  // pg-pool passes an idle connection's failure on here too, after the connection's own listener has told of it
  pool.on('error', () => undefined);

  const closable = new ClosablePool(pool, () => new DatabaseUnavailableError(target.address, 'the pool is closed: the statement got no connection'));
  const connect = async (): Promise<{ client: pg.PoolClient; release: (destroy: boolean) => void }> => {
    let client: pg.PoolClient;
    try {
      client = await closable.connect();
    } catch (error) {
      throw error instanceof DatabaseUnavailableError ? error : unavailable(error);
    }
    return { client, release: (destroy) => client.release(destroy) };
  };
  const mapError = (error: unknown): unknown => (isConnectionFailure(error) ? unavailable(error) : error);

  return {
    pool,
    async query<R extends pg.QueryResultRow>(text: string, params?: unknown[]) {
      const { client, release } = await connect();
      let failure: unknown;
      try {
        return await client.query<R>(text, params);
      } catch (error) {
        failure = error;
        throw mapError(error);
      } finally {
        release(isConnectionFailure(failure));
      }
    },
    async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
      const { client, release } = await connect();
      let destroy = false;
      try {
        await client.query('BEGIN');
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        try {
          await client.query('ROLLBACK');
        } catch {
          destroy = true; // a connection that cannot roll back must not go back to the pool
        }
        throw mapError(error);
      } finally {
        release(destroy);
      }
    },
    close() {
      return closable.close();
    },
  };
}

/**
 * pg-pool's connect and end, with what end() leaves out: a request still waiting for a connection when the pool ends
 * would wait for ever, so close() refuses those, and any connect after it, with `closedError`.
 */
class ClosablePool {
  private readonly waiting = new Set<(error: Error) => void>();
  private readonly closing = new ShutdownOnce(() => this.shutdown());

  constructor(
    private readonly pool: pg.Pool,
    private readonly closedError: () => Error,
  ) {}

  connect(): Promise<pg.PoolClient> {
    if (this.closing.called) return Promise.reject(this.closedError());
    return new Promise<pg.PoolClient>((resolve, reject) => {
      this.waiting.add(reject);
      this.pool.connect().then(
        (client) => {
          // refused at close while it waited: the connection goes straight back
          if (this.waiting.delete(reject)) resolve(client);
          else client.release();
        },
        (error: unknown) => {
          this.waiting.delete(reject);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  /** Refuses the waiting requests, then ends the pool once its checked-out connections are released; a second call waits for the first. */
  close(): Promise<void> {
    return this.closing.call();
  }

  private async shutdown(): Promise<void> {
    for (const refuse of this.waiting) refuse(this.closedError());
    this.waiting.clear();
    if (!this.pool.ended && !this.pool.ending) await this.pool.end();
  }
}

/** True when an error means the connection or the server is gone, rather than a failed statement. */
function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_ERROR_CODES.has(code) || UNAVAILABLE_SQLSTATES.test(code))) return true;
  return CONNECTION_LOST_MESSAGES.test(error.message);
}
