import type { AuthToken, Config } from 'neo4j-driver';
import { neo4jDriver } from './neo4j-driver.js';
import { abortable, throwIfAborted } from './abort.js';
import { checkBulkCreate, neo4jBulkStatements } from './bulk-create.js';
import { findWritingClause } from './cypher-text.js';
import { GraphQueryError, GraphReadOnlyError, GraphStoreClosedError, graphErrorFromNeo4j, type GraphErrorContext } from './errors.js';
import { timeLimitedRead } from './graph-read.js';
import type {
  GraphNodeKey,
  GraphParameters,
  GraphPropertyIndex,
  GraphQueryOptions,
  GraphReadOptions,
  GraphReadResult,
  GraphRecord,
  GraphStore,
  GraphTransaction,
} from './graph-store.js';
import { nodeKeysOf } from './node-keys.js';
import { fromNeo4j, toNeo4jParameters } from './neo4j-values.js';
import { type Neo4jConnection } from './parameters.js';

/** The part of a neo4j-driver Record the adapter reads. */
export interface Neo4jRecordLike {
  readonly keys: readonly PropertyKey[];
  get(key: string): unknown;
}

/** The part of a neo4j-driver Transaction the adapter uses. */
export interface Neo4jTransactionLike {
  run(query: string, parameters: Record<string, unknown>): AsyncIterable<Neo4jRecordLike>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** The part of a neo4j-driver Session the adapter uses. */
export interface Neo4jSessionLike {
  /** `config.timeout`: the server ends the transaction after this many ms (neo4j-driver's TransactionConfig). */
  run(query: string, parameters: Record<string, unknown>, config?: { timeout?: number }): AsyncIterable<Neo4jRecordLike>;
  beginTransaction(): Neo4jTransactionLike;
  close(): Promise<void>;
}

/** How a session is opened: database, access mode, and for single sign-on whose identity it runs under. */
export interface Neo4jSessionConfig {
  database?: string;
  defaultAccessMode: 'READ' | 'WRITE';
  /** The user the driver's own account impersonates (the server checks the IMPERSONATE privilege). */
  impersonatedUser?: string;
  /** Credentials of this session instead of the driver's (user switching, e.g. a bearer token). */
  auth?: AuthToken;
}

/** The part of a neo4j-driver Driver the adapter uses, so tests can record what crosses the driver boundary. */
export interface Neo4jDriverLike {
  session(config: Neo4jSessionConfig): Neo4jSessionLike;
  close(): Promise<void>;
}

/** Makes a driver; the default is neo4j-driver's own `neo4j.driver`. */
export type Neo4jDriverFactory = (url: string, auth: AuthToken, config: Config) => Neo4jDriverLike;

/** Options of createNeo4jStore. */
export interface Neo4jStoreOptions {
  readonly driverFactory?: Neo4jDriverFactory;
}

/**
 * The driver must not retry underneath the executor, whose max_retry and delay options decide how often and how
 * far apart a transient failure is retried: managed transactions (executeRead/executeWrite) are not used, and
 * auto-commit runs do not get the driver's one-shot retry either.
 */
export const NEO4J_DRIVER_CONFIG: Config = {
  maxTransactionRetryTime: 0,
  disableAutoCommitRetries: true,
  connectionTimeout: 15_000,
  connectionAcquisitionTimeout: 30_000,
  userAgent: 'loom-graph',
};

const defaultDriverFactory: Neo4jDriverFactory = (url, auth, config) => neo4jDriver().driver(url, auth, config);

/**
 * A GraphStore on Neo4j over Bolt. Each run is an auto-commit transaction in its own session, in READ access mode
 * when the resource is read_only (so the server refuses a write the text check missed) and WRITE otherwise.
 * Nothing connects until the first query.
 */
export function createNeo4jStore(connection: Neo4jConnection, options: Neo4jStoreOptions = {}): GraphStore {
  const factory = options.driverFactory ?? defaultDriverFactory;
  const driver = factory(connection.url, neo4jDriver().auth.basic(connection.user, connection.password), NEO4J_DRIVER_CONFIG);
  return new Neo4jStore(driver, connection);
}

class Neo4jStore implements GraphStore {
  readonly kind = 'neo4j' as const;
  readonly readOnly: boolean;
  private readonly context: GraphErrorContext;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly driver: Neo4jDriverLike,
    private readonly connection: Neo4jConnection,
  ) {
    this.readOnly = connection.readOnly;
    const address = connection.database === undefined ? connection.url : `${connection.url} database ${connection.database}`;
    this.context = { store: 'neo4j', address, password: connection.password, readOnly: connection.readOnly };
  }

  async run(query: string, parameters: GraphParameters = {}, options: GraphQueryOptions = {}): Promise<GraphRecord[]> {
    const records: GraphRecord[] = [];
    for await (const record of this.stream(query, parameters, options)) records.push(record);
    return records;
  }

  async read(query: string, parameters: GraphParameters, options: GraphReadOptions): Promise<GraphReadResult> {
    if (this.closing !== undefined) throw this.closedError();
    throwIfAborted(options.signal);
    checkColumns(options.columns, this.context.address);
    const context: GraphErrorContext = { ...this.context, readOnly: true, timeLimited: true };
    const columns = options.columns === undefined ? {} : { columns: options.columns };
    return timeLimitedRead(context, options, async (signal, timeoutMs) => {
      // READ access mode: the server refuses any write in the session (Neo.ClientError.Statement.AccessMode); the
      // transaction's timeout has the server end a statement that runs too long
      const session = this.driver.session({ database: this.connection.database, defaultAccessMode: 'READ' });
      const records: GraphRecord[] = [];
      try {
        const started = (): AsyncIterable<Neo4jRecordLike> => session.run(query, toNeo4jParameters(parameters), { timeout: timeoutMs });
        for await (const record of this.records(started, { signal, ...columns }, context)) {
          records.push(record);
          if (records.length > options.maxRows) break; // the session's close discards the rest on the server
        }
      } finally {
        await this.closeSession(session, signal);
      }
      return records;
    });
  }

  async *stream(query: string, parameters: GraphParameters = {}, options: GraphQueryOptions = {}): AsyncGenerator<GraphRecord> {
    this.assertUsable(query, options);
    const session = this.driver.session({ database: this.connection.database, defaultAccessMode: this.readOnly ? 'READ' : 'WRITE' });
    try {
      yield* this.records(() => session.run(query, toNeo4jParameters(parameters)), options);
    } finally {
      await this.closeSession(session, options.signal);
    }
  }

  async writeTransaction<T>(work: (tx: GraphTransaction) => Promise<T>): Promise<T> {
    if (this.closing !== undefined) throw this.closedError();
    if (this.readOnly) throw new GraphReadOnlyError('neo4j', this.context.address, undefined, 'refused a write transaction before opening it');
    const session = this.driver.session({ database: this.connection.database, defaultAccessMode: 'WRITE' });
    let transaction: Neo4jTransactionLike | undefined;
    try {
      const tx = session.beginTransaction();
      transaction = tx;
      const result = await work({
        run: async (query, parameters = {}, options = {}) => {
          throwIfAborted(options.signal);
          checkColumns(options.columns, this.context.address);
          const records: GraphRecord[] = [];
          for await (const record of this.records(() => tx.run(query, toNeo4jParameters(parameters)), options)) records.push(record);
          return records;
        },
        createInBulk: async (write, options = {}) => {
          throwIfAborted(options.signal);
          const statements = neo4jBulkStatements(checkBulkCreate(write));
          // all sent before the first answer is read: the driver pipelines them on the transaction's connection, and
          // the server runs them in order, so each sees the nodes of those before it. One abort listener for all of
          // them (the transaction is rolled back when it fires), not one per statement.
          const sent = Promise.all(
            statements.map(async (statement) => {
              for await (const record of this.records(() => tx.run(statement.text, toNeo4jParameters(statement.parameters)), {})) void record;
            }),
          );
          await abortable(sent, options.signal);
        },
      });
      await tx.commit();
      transaction = undefined;
      return result;
    } catch (error) {
      // a rollback that fails (the connection is gone) changes nothing: the server drops the transaction with it
      await transaction?.rollback().catch(() => undefined);
      throw graphErrorFromNeo4j(error, this.context);
    } finally {
      await session.close().catch(() => undefined);
    }
  }

  async ensurePropertyIndexes(indexes: readonly (GraphPropertyIndex | GraphNodeKey)[]): Promise<void> {
    if (this.closing !== undefined) throw this.closedError();
    if (this.readOnly) throw new GraphReadOnlyError('neo4j', this.context.address, undefined, 'refused to create indexes');
    for (const { label, properties } of nodeKeysOf(indexes)) {
      // schema statements cannot run in an explicit transaction with data writes: one auto-commit statement each.
      // The '.' keeps names apart that '_' would merge (label A_b property c, label A property b_c): IF NOT EXISTS
      // skips an index whose name is taken, whatever its schema. An equivalent index of another name also counts.
      // Several properties make one composite index, which a MERGE on all of them uses.
      const name = `loom_${label}.${properties.join('.')}`;
      const on = properties.map((property) => `n.\`${property}\``).join(', ');
      await this.run(`CREATE INDEX \`${name}\` IF NOT EXISTS FOR (n:\`${label}\`) ON (${on})`);
    }
  }

  close(): Promise<void> {
    this.closing ??= this.driver.close();
    return this.closing;
  }

  private assertUsable(query: string, options: GraphQueryOptions): void {
    if (this.closing !== undefined) throw this.closedError();
    throwIfAborted(options.signal);
    checkColumns(options.columns, this.context.address);
    if (this.readOnly) {
      const clause = findWritingClause(query);
      if (clause !== undefined) throw GraphReadOnlyError.forClause('neo4j', this.context.address, clause);
    }
  }

  private async *records(start: () => AsyncIterable<Neo4jRecordLike>, options: GraphQueryOptions, context = this.context): AsyncGenerator<GraphRecord> {
    const { signal, columns } = options;
    try {
      const iterator = start()[Symbol.asyncIterator]();
      for (;;) {
        const next = await abortable(iterator.next(), signal);
        if (next.done === true) return;
        yield toRecord(next.value, columns, this.context.address);
      }
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason;
      throw graphErrorFromNeo4j(error, context);
    }
  }

  private async closeSession(session: Neo4jSessionLike, signal: AbortSignal | undefined): Promise<void> {
    const closed = session.close().catch(() => undefined);
    // after an abort the session may still wait for the server; closing it must not hold up the caller
    if (signal?.aborted !== true) await closed;
  }

  private closedError(): GraphStoreClosedError {
    return new GraphStoreClosedError('neo4j', this.context.address);
  }
}

/** Refuses declared columns that cannot name a record (as the AGE adapter does), before anything is sent. */
function checkColumns(columns: readonly string[] | undefined, address: string): void {
  if (columns === undefined) return;
  if (columns.some((column) => typeof column !== 'string' || column === '') || new Set(columns).size !== columns.length) {
    throw new GraphQueryError('neo4j', address, undefined, 'options.columns must be distinct non-empty names');
  }
}

/**
 * A record as plain data, keyed by the declared columns in order when there are some (so a query reads the same on
 * both adapters: AGE names its columns only by declaration), else by Neo4j's own column names.
 */
function toRecord(record: Neo4jRecordLike, columns: readonly string[] | undefined, address: string): GraphRecord {
  const keys = record.keys.map(String);
  if (columns !== undefined && columns.length !== keys.length) {
    throw new GraphQueryError(
      'neo4j',
      address,
      undefined,
      `the query returns ${keys.length} columns (${keys.join(', ')}) but options.columns declares ${columns.length} (${columns.join(', ')}): declare options.columns, one name per RETURN item`,
    );
  }
  const result: { [column: string]: ReturnType<typeof fromNeo4j> } = {};
  keys.forEach((key, index) => {
    const column = columns?.[index] ?? key;
    Object.defineProperty(result, column, { value: fromNeo4j(record.get(key)), enumerable: true, writable: true, configurable: true });
  });
  return result;
}
