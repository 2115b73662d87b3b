import { createPool, type Database } from '@loom/postgres';
import type pg from 'pg';
import { abortable, throwIfAborted } from './abort.js';
import { ageBulkInsert, ageBulkLabels, ageLabelKey, agePropertyKey, type AgeLabel, type AgeLabelTable } from './age-bulk.js';
import { ageRecord, ageStatement, type AgeStatement } from './age-statement.js';
import { ageNodeMerge } from './age-node-merge.js';
import { ageTrailingCreateInsert } from './age-trailing-create.js';
import { checkBulkCreate } from './bulk-create.js';
import { findWritingClause } from './cypher-text.js';
import { ensureAgeExtension, ensureAgeGraph } from './age-graphs.js';
import { GraphQueryError, GraphReadOnlyError, GraphStoreClosedError, GraphUnavailableError, graphErrorFromPg, type GraphErrorContext } from './errors.js';
import { timeLimitedRead } from './graph-read.js';
import type {
  GraphBulkCreate,
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
import { bracketed, checkGraphName, type AgeConnection } from './parameters.js';
import { trailingRelationshipCreate, type TrailingRelationshipCreate } from './trailing-create.js';

/** Options of createAgeStore. */
export interface AgeStoreOptions {
  /** The server is an embedded PostgreSQL (one connection per pool); default: true when this process serves it. */
  readonly embedded?: boolean;
  /** Rows per FETCH when stream() reads through a cursor; default 500. */
  readonly streamBatchSize?: number;
  /** Told when a pooled connection fails while nobody is using it. */
  readonly logger?: { warn(obj: object, msg: string): void };
}

const DEFAULT_STREAM_BATCH = 500;
const INSUFFICIENT_PRIVILEGE = '42501';
// sent with BEGIN, or before a statement as one simple query (one transaction): SET LOCAL ends with the transaction, so
// other statements on the session (PGlite has one for every connection) keep their plans
const KEYED_SETTINGS = 'SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off';
const COLUMN_LIST_MISMATCH = '42804';

/** One checked-out connection; `broken` sends it away instead of back to the pool. */
interface Lease {
  readonly client: pg.PoolClient;
  broken: boolean;
}

/**
 * A GraphStore on PostgreSQL with Apache AGE through `pg`. Every new connection runs `LOAD 'age'` and sets
 * `search_path = ag_catalog, "$user", public`; the first one also installs the extension and creates the graph when
 * they are missing (unless read_only). Reads of a read_only resource run in READ ONLY transactions. Nothing connects
 * until the first query.
 */
export function createAgeStore(connection: AgeConnection, options: AgeStoreOptions = {}): GraphStore {
  checkGraphName(connection.graph); // it is written into the SQL text
  const credentials = `${encodeURIComponent(connection.user)}:${encodeURIComponent(connection.password)}`;
  const url = `postgresql://${credentials}@${bracketed(connection.host)}:${connection.port}/${encodeURIComponent(connection.database)}`;
  const db = createPool(url, {
    applicationName: 'loom-graph',
    ...(options.embedded === undefined ? {} : { embedded: options.embedded }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  return new AgeStore(db, connection, options.streamBatchSize ?? DEFAULT_STREAM_BATCH);
}

class AgeStore implements GraphStore {
  readonly kind = 'age' as const;
  readonly readOnly: boolean;
  private readonly context: GraphErrorContext;
  private readonly prepared = new WeakSet<pg.PoolClient>();
  /** Label tables known to exist, by ageLabelKey, so a bulk write looks them up once per store. */
  private readonly knownLabels = new Map<string, AgeLabelTable>();
  private extensionReady: Promise<void> | undefined;
  private graphReady: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    private readonly connection: AgeConnection,
    private readonly streamBatchSize: number,
  ) {
    this.readOnly = connection.readOnly;
    const address = `${bracketed(connection.host)}:${connection.port}/${connection.database} graph ${connection.graph}`;
    this.context = { store: 'age', address, password: connection.password, readOnly: connection.readOnly };
  }

  async run(query: string, parameters: GraphParameters = {}, options: GraphQueryOptions = {}): Promise<GraphRecord[]> {
    const create = options.insertTrailingRelationship === true && !this.readOnly ? trailingRelationshipCreate(query) : undefined;
    const statement = create === undefined ? this.statement(query, parameters, options) : this.relationshipInsert(create, parameters, options.signal);
    const keyed = options.lookupRowsByKey === true;
    const merge = keyed && !this.readOnly ? ageNodeMerge(this.connection.graph, query, parameters) : undefined;
    return this.withLease(options.signal, async (lease) => {
      if (merge !== undefined && (await this.labelReady(lease, { name: merge.label, kind: 'vertex' }))) {
        await this.sql(lease, `${KEYED_SETTINGS}; ${merge.statement((text) => lease.client.escapeLiteral(text))}`, options.signal);
        return []; // the statement returns nothing
      }
      // a type whose name a node label has: the statement as written, for AGE to refuse
      const written =
        create === undefined || (await this.labelReady(lease, { name: create.type, kind: 'edge' })) ? statement : this.statement(query, parameters, options);
      if (!this.readOnly && !keyed) return this.execute(lease, written, options.signal);
      const begin = `${this.readOnly ? 'BEGIN READ ONLY' : 'BEGIN'}${keyed ? `; ${KEYED_SETTINGS}` : ''}`;
      return this.inTransaction(lease, begin, () => this.execute(lease, written, options.signal));
    });
  }

  async read(query: string, parameters: GraphParameters, options: GraphReadOptions): Promise<GraphReadResult> {
    this.checkUsable(options.signal);
    const statement = ageStatement(this.connection.graph, query, parameters, options.columns, this.context.address);
    // one row past the limit tells whether there were more; the rest are never read
    const limited = { ...statement, sql: `SELECT * FROM (${statement.sql}) AS loom_read LIMIT ${options.maxRows + 1}` };
    // READ ONLY: PostgreSQL refuses any write in it, AGE's CREATE, SET, DELETE and MERGE included; statement_timeout has
    // the server cancel the statement (PGlite has no timer for it: there the time limit's signal ends the wait alone)
    const begin = (timeoutMs: number): string => `BEGIN READ ONLY; SET LOCAL statement_timeout = ${timeoutMs}`;
    const fetch = (signal: AbortSignal, timeoutMs: number): Promise<GraphRecord[]> =>
      this.withLease(signal, (lease) => this.inTransaction(lease, begin(timeoutMs), () => this.execute(lease, limited, signal)));
    return timeLimitedRead(this.context, options, fetch);
  }

  async *stream(query: string, parameters: GraphParameters = {}, options: GraphQueryOptions = {}): AsyncGenerator<GraphRecord> {
    const statement = this.statement(query, parameters, options);
    // With a pool of one connection (the embedded server) a cursor would hold that connection, and PGlite's single
    // session, until the consumer finishes: a consumer that writes while it reads would wait on itself. There the
    // rows are read in one go and then yielded.
    if (this.db.pool.options.max === 1) {
      yield* await this.run(query, parameters, options);
      return;
    }
    const lease = await this.lease(options.signal);
    let open = false;
    try {
      await this.sql(lease, this.readOnly ? 'BEGIN READ ONLY' : 'BEGIN');
      open = true;
      await this.sql(lease, { text: `DECLARE loom_graph_stream NO SCROLL CURSOR FOR ${statement.sql}`, values: statement.values }, options.signal);
      for (;;) {
        const batch = await this.sql(lease, { text: `FETCH ${this.streamBatchSize} FROM loom_graph_stream`, rowMode: 'array' }, options.signal);
        for (const row of batch.rows as unknown[][]) yield ageRecord(statement.columns, row);
        if (batch.rows.length < this.streamBatchSize) break;
      }
      await this.sql(lease, 'COMMIT');
      open = false;
    } finally {
      // the consumer left early or something failed: end the transaction (and the cursor with it)
      if (open) await this.rollback(lease);
      this.release(lease);
    }
  }

  async writeTransaction<T>(work: (tx: GraphTransaction) => Promise<T>): Promise<T> {
    if (this.readOnly) throw new GraphReadOnlyError('age', this.context.address, undefined, 'refused a write transaction before opening it');
    // label tables this transaction creates are looked up (and taken as known) after their creation, before it commits:
    // a failed transaction forgets them all
    const createdLabels: string[] = [];
    let result: T;
    try {
      result = await this.withLease(undefined, (lease) =>
        this.inTransaction(lease, 'BEGIN', () =>
          work({
            run: (query, parameters = {}, options = {}) => this.execute(lease, this.statement(query, parameters, options), options.signal),
            createInBulk: (write, options = {}) => this.createInBulk(lease, write, createdLabels, options.signal),
          }),
        ),
      );
    } catch (error) {
      if (createdLabels.length > 0) this.knownLabels.clear();
      throw error;
    }
    return result;
  }

  async ensurePropertyIndexes(indexes: readonly (GraphPropertyIndex | GraphNodeKey)[]): Promise<void> {
    if (this.closing !== undefined) throw new GraphStoreClosedError('age', this.context.address);
    if (this.readOnly) throw new GraphReadOnlyError('age', this.context.address, undefined, 'refused to create indexes');
    const keys = nodeKeysOf(indexes);
    await this.withLease(undefined, async (lease) => {
      for (const key of keys) await this.ensureKeyIndex(lease, key);
    });
  }

  close(): Promise<void> {
    this.closing ??= this.db.close();
    return this.closing;
  }

  /** One btree index over a label table's key properties, and the table itself when its label has no node yet. */
  private async ensureKeyIndex(lease: Lease, { label, properties }: GraphNodeKey): Promise<void> {
    const graph = this.connection.graph;
    // AGE keeps each label in a table of the graph's schema, made at the label's first CREATE; the index needs it now
    const labelExists = (): Promise<boolean> =>
      this.rowExists(lease, 'SELECT 1 FROM ag_catalog.ag_label l JOIN ag_catalog.ag_graph g ON l.graph = g.graphid WHERE g.name = $1 AND l.name = $2', [
        graph,
        label,
      ]);
    if (!(await labelExists())) {
      await this.createUnlessMade(
        () => this.sql(lease, { text: 'SELECT ag_catalog.create_vlabel($1::cstring, $2::cstring)', values: [graph, label] }),
        labelExists,
      );
    }
    // a key of one property keeps the name it always had; '(' cannot occur in an identifier, so the names of keys of
    // several properties never meet those
    const name = (properties.length === 1 ? `${label}_${properties[0]}_loom_idx` : `${label}(${properties.join(',')})_loom_idx`).slice(0, 63);
    // `WHERE n.p = v`, and with age.enable_containment off (see prepareSession) `MERGE (n:L {p: v})` too, compile to
    // agtype_access_operator(properties, '"p"') = v, which this btree index serves
    const columns = properties.map((property) => agePropertyKey(property)).join(', ');
    // IF NOT EXISTS does not cover two writers creating the same index at once: the loser fails on the catalog's unique name
    await this.createUnlessMade(
      () => this.sql(lease, `CREATE INDEX IF NOT EXISTS "${name}" ON "${graph}"."${label}" USING btree (${columns})`),
      () => this.rowExists(lease, 'SELECT 1 FROM pg_catalog.pg_indexes WHERE schemaname = $1 AND indexname = $2', [graph, name]),
    );
  }

  /** Whether a catalog query finds its one row. */
  private async rowExists(lease: Lease, text: string, values: readonly string[]): Promise<boolean> {
    return (await this.sql(lease, { text, values: [...values] })).rowCount === 1;
  }

  /** Runs `create`; its error is dropped when `made` then says another writer made the same thing in the meantime. */
  private async createUnlessMade(create: () => Promise<unknown>, made: () => Promise<boolean>): Promise<void> {
    try {
      await create();
    } catch (error) {
      if (!(await made())) throw error;
    }
  }

  /**
   * A bulk write as SQL on the label tables, in one statement (see ageBulkInsert): AGE's CREATE checks that each node a
   * new relationship starts or ends at still exists by scanning that node's whole label table, which makes Cypher
   * writes of a token graph slower the bigger the graph. Label tables are created when missing; relationships to a
   * label that has no table yet have no nodes to connect and are left out.
   */
  private async createInBulk(lease: Lease, write: GraphBulkCreate, createdLabels: string[], signal: AbortSignal | undefined): Promise<void> {
    if (this.closing !== undefined) throw new GraphStoreClosedError('age', this.context.address);
    throwIfAborted(signal);
    const checked = checkBulkCreate(write);
    const endpoints = checked.relationships.flatMap((batch) => [batch.from.label, batch.to.label]).map((name): AgeLabel => ({ name, kind: 'vertex' }));
    const tables = await this.presentLabels(lease, [...ageBulkLabels(checked), ...endpoints]);
    const written = new Set(checked.nodes.map((batch) => batch.label));
    const found = (label: string): boolean => written.has(label) || tables.has(ageLabelKey({ name: label, kind: 'vertex' }));
    const relationships = checked.relationships.filter((batch) => found(batch.from.label) && found(batch.to.label));
    const writable = { nodes: checked.nodes, relationships };
    const missing = ageBulkLabels(writable).filter((label) => !tables.has(ageLabelKey(label)));
    if (missing.length > 0) {
      await this.createLabels(lease, missing);
      createdLabels.push(...missing.map(ageLabelKey));
      for (const [key, table] of await this.presentLabels(lease, missing)) tables.set(key, table);
    }
    if (writable.nodes.length === 0 && relationships.length === 0) return;
    const statement = ageBulkInsert(this.connection.graph, writable, (label) => {
      const table = tables.get(ageLabelKey(label));
      if (table === undefined)
        throw new GraphQueryError('age', this.context.address, undefined, `the label table of ${label.kind} ${label.name} was not found after its creation`);
      return table;
    });
    await this.sql(lease, { text: statement.text, values: statement.values }, signal);
  }

  /** The tables (label id, sequence) of those of these labels that exist, by `kind:name`, asking the server only about those not known yet. */
  private async presentLabels(lease: Lease, labels: readonly AgeLabel[]): Promise<Map<string, AgeLabelTable>> {
    const present = new Map<string, AgeLabelTable>();
    const unknown: AgeLabel[] = [];
    for (const label of labels) {
      const known = this.knownLabels.get(ageLabelKey(label));
      if (known === undefined) unknown.push(label);
      else present.set(ageLabelKey(label), known);
    }
    if (unknown.length === 0) return present;
    const found = await this.sql(lease, {
      text:
        "SELECT l.name::text AS name, CASE l.kind WHEN 'v' THEN 'vertex' ELSE 'edge' END AS kind, l.id AS id, l.seq_name::text AS sequence " +
        'FROM ag_catalog.ag_label l JOIN ag_catalog.ag_graph g ON l.graph = g.graphid WHERE g.name = $1 AND l.name::text = ANY($2::text[])',
      values: [this.connection.graph, unknown.map((label) => label.name)],
    });
    for (const row of found.rows as { name: string; kind: 'vertex' | 'edge'; id: number; sequence: string }[]) {
      const key = ageLabelKey(row);
      const table: AgeLabelTable = { id: row.id, sequence: row.sequence };
      present.set(key, table);
      this.knownLabels.set(key, table); // committed by whoever made it
    }
    return present;
  }

  /**
   * Creates label tables inside the open transaction, those of each kind in one statement; when that fails (another
   * writer made one of them in the meantime), one by one, a writer that made one first being no failure.
   */
  private async createLabels(lease: Lease, labels: readonly AgeLabel[]): Promise<void> {
    await this.sql(lease, 'SAVEPOINT loom_labels');
    try {
      for (const kind of ['vertex', 'edge'] as const) {
        const names = labels.filter((label) => label.kind === kind).map((label) => label.name);
        if (names.length === 0) continue;
        const create = kind === 'vertex' ? 'create_vlabel' : 'create_elabel';
        await this.sql(lease, {
          text: `SELECT ag_catalog.${create}($1::cstring, name::cstring) FROM unnest($2::text[]) AS name`,
          values: [this.connection.graph, names],
        });
      }
    } catch {
      await this.sql(lease, 'ROLLBACK TO SAVEPOINT loom_labels');
      for (const label of labels) await this.createLabel(lease, label);
    }
    await this.sql(lease, 'RELEASE SAVEPOINT loom_labels');
  }

  /** Creates a label table inside the open transaction; a writer that made it first in the meantime is no failure. */
  private async createLabel(lease: Lease, label: AgeLabel): Promise<void> {
    const create = label.kind === 'vertex' ? 'create_vlabel' : 'create_elabel';
    await this.sql(lease, 'SAVEPOINT loom_label');
    try {
      await this.sql(lease, { text: `SELECT ag_catalog.${create}($1::cstring, $2::cstring)`, values: [this.connection.graph, label.name] });
    } catch (error) {
      await this.sql(lease, 'ROLLBACK TO SAVEPOINT loom_label');
      const present = await this.presentLabels(lease, [label]);
      if (!present.has(ageLabelKey(label))) throw error;
      return;
    }
    await this.sql(lease, 'RELEASE SAVEPOINT loom_label');
  }

  /** Whether the label's table exists, made now (in a transaction of its own, as AGE would) when missing; false when a label of the other kind has the name. */
  private async labelReady(lease: Lease, label: AgeLabel): Promise<boolean> {
    const present = await this.presentLabels(lease, [label]); // asks the server only once
    if (present.has(ageLabelKey(label))) return true;
    if (present.has(ageLabelKey({ name: label.name, kind: label.kind === 'edge' ? 'vertex' : 'edge' }))) return false;
    const create = `SELECT ag_catalog.${label.kind === 'vertex' ? 'create_vlabel' : 'create_elabel'}($1::cstring, $2::cstring)`;
    const made = async (): Promise<boolean> => (await this.presentLabels(lease, [label])).has(ageLabelKey(label));
    await this.createUnlessMade(() => this.sql(lease, { text: create, values: [this.connection.graph, label.name] }), made);
    return true;
  }

  /** A statement's trailing relationship CREATE as an insert (see ageTrailingCreateInsert), refused as statement() refuses. */
  private relationshipInsert(create: TrailingRelationshipCreate, parameters: GraphParameters, signal: AbortSignal | undefined): AgeStatement {
    this.checkUsable(signal);
    return ageTrailingCreateInsert(this.connection.graph, create, parameters, this.context.address);
  }

  /** Refuses a statement on a closed store or with an aborted signal. */
  private checkUsable(signal: AbortSignal | undefined): void {
    if (this.closing !== undefined) throw new GraphStoreClosedError('age', this.context.address);
    throwIfAborted(signal);
  }

  /** Everything that can be refused without the server: closed store, read_only write, `$$`, undeclared columns. */
  private statement(query: string, parameters: GraphParameters, options: GraphQueryOptions): AgeStatement {
    this.checkUsable(options.signal);
    if (this.readOnly) {
      const clause = findWritingClause(query);
      if (clause !== undefined) throw GraphReadOnlyError.forClause('age', this.context.address, clause);
    }
    return ageStatement(this.connection.graph, query, parameters, options.columns, this.context.address);
  }

  private async execute(lease: Lease, statement: AgeStatement, signal: AbortSignal | undefined): Promise<GraphRecord[]> {
    const result = await this.sql(lease, { text: statement.sql, values: statement.values, rowMode: 'array' }, signal);
    return (result.rows as unknown[][]).map((row) => ageRecord(statement.columns, row));
  }

  private async inTransaction<T>(lease: Lease, begin: string, work: () => Promise<T>): Promise<T> {
    await this.sql(lease, begin);
    let result: T;
    try {
      result = await work();
    } catch (error) {
      // a broken connection (an aborted statement, a lost server) is destroyed on release, which ends the transaction;
      // a ROLLBACK on it would wait behind the statement it was abandoned for
      if (!lease.broken) await this.rollback(lease);
      throw error;
    }
    const committed = await this.sql(lease, 'COMMIT');
    // PostgreSQL answers COMMIT of a transaction in which a statement failed (and the caller caught it) with ROLLBACK
    if (committed.command === 'ROLLBACK') {
      throw new GraphQueryError('age', this.context.address, undefined, 'the transaction was rolled back because a statement in it failed');
    }
    return result;
  }

  private async rollback(lease: Lease): Promise<void> {
    try {
      await lease.client.query('ROLLBACK');
    } catch {
      lease.broken = true; // a connection that cannot roll back must not go back to the pool
    }
  }

  private async withLease<T>(signal: AbortSignal | undefined, work: (lease: Lease) => Promise<T>): Promise<T> {
    const lease = await this.lease(signal);
    try {
      return await work(lease);
    } finally {
      this.release(lease);
    }
  }

  /** Checks out a connection and prepares its session for AGE once. */
  private async lease(signal: AbortSignal | undefined): Promise<Lease> {
    const connecting = this.db.pool.connect();
    let client: pg.PoolClient;
    try {
      client = await abortable(connecting, signal);
    } catch (error) {
      if (signal?.aborted === true) {
        connecting.then(
          (late) => late.release(),
          () => undefined,
        );
        throw signal.reason;
      }
      throw graphErrorFromPg(error, this.context);
    }
    const lease: Lease = { client, broken: false };
    // a connection that dies while checked out emits 'error'; unheard, that would end the process
    client.on('error', markBroken);
    leases.set(client, lease);
    try {
      if (!this.prepared.has(client)) {
        await this.prepareSession(lease);
        this.prepared.add(client);
      }
    } catch (error) {
      this.release(lease);
      throw error;
    }
    return lease;
  }

  private release(lease: Lease): void {
    lease.client.removeListener('error', markBroken);
    leases.delete(lease.client);
    lease.client.release(lease.broken);
  }

  private async prepareSession(lease: Lease): Promise<void> {
    if (!this.readOnly) {
      this.extensionReady ??= ensureAgeExtension((query) => this.sql(lease, query)).catch((error: unknown) => {
        this.extensionReady = undefined; // the next connection tries again
        throw error;
      });
      await this.extensionReady;
    }
    try {
      await this.sql(lease, "LOAD 'age'");
    } catch (error) {
      // LOAD needs superuser unless the library sits in $libdir/plugins; servers that preload AGE
      // (shared_preload_libraries) do not need it, and a server without AGE fails clearly at the first cypher() call
      if (!(error instanceof GraphQueryError && error.code === INSUFFICIENT_PRIVILEGE)) throw error;
    }
    // create_graph and the agtype operators need ag_catalog on the path; relational tables must be schema-qualified.
    // With containment off, a pattern's property map (`MATCH (n:L {p: v})`, `MERGE ...`) compares its values with =
    // (agtype_access_operator) instead of agtype containment (@>), which the btree indexes of ensurePropertyIndexes
    // serve: with containment, a MERGE reads its label's whole table for every row. (AGE still matches list and map
    // values by containment, so what a pattern finds is the same.)
    await this.sql(lease, 'SET search_path = ag_catalog, "$user", public');
    await this.sql(lease, 'SET age.enable_containment = off');
    this.graphReady ??= ensureAgeGraph((query) => this.sql(lease, query), this.connection.graph, this.readOnly, this.context.address).catch(
      (error: unknown) => {
        this.graphReady = undefined;
        throw error;
      },
    );
    await this.graphReady;
  }

  /** One pg call with abort and error mapping: a failed connection or an aborted call is not reused. */
  private async sql(lease: Lease, query: string | pg.QueryConfig | pg.QueryArrayConfig, signal?: AbortSignal): Promise<pg.QueryResult | pg.QueryArrayResult> {
    throwIfAborted(signal);
    const running = lease.client.query(query as pg.QueryConfig);
    try {
      return await abortable(running, signal);
    } catch (error) {
      if (signal?.aborted === true) {
        // destroying the connection is the only way pg has to stop a query; the server rolls its work back
        running.catch(() => undefined);
        lease.broken = true;
        throw signal.reason;
      }
      const mapped = graphErrorFromPg(error, this.context);
      if (mapped instanceof GraphUnavailableError) lease.broken = true;
      if (mapped instanceof GraphQueryError && mapped.code === COLUMN_LIST_MISMATCH) {
        const hint = `${(error as Error).message} (declare options.columns, one name per RETURN item)`;
        throw new GraphQueryError('age', this.context.address, mapped.code, hint, { cause: error });
      }
      throw mapped;
    }
  }
}

// the 'error' listener has to be one function to remove it again; it finds its lease through the client
const leases = new WeakMap<pg.PoolClient, Lease>();

function markBroken(this: pg.PoolClient): void {
  const lease = leases.get(this);
  if (lease !== undefined) lease.broken = true;
}
