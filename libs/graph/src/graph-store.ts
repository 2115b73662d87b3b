/** Which adapter serves a GraphStore. */
export type GraphStoreKind = 'neo4j' | 'age';

/** A node as both adapters return it; `id` is opaque (Neo4j elementId, AGE graphid as decimal text). */
export interface GraphNode {
  readonly id: string;
  readonly labels: readonly string[];
  readonly properties: { readonly [key: string]: GraphValue };
}

/** A relationship as both adapters return it; `start` and `end` are the ids of its nodes. */
export interface GraphRelationship {
  readonly id: string;
  readonly type: string;
  readonly start: string;
  readonly end: string;
  readonly properties: { readonly [key: string]: GraphValue };
}

/** A path: its nodes in order and the relationships between them (one fewer than nodes). */
export interface GraphPath {
  readonly nodes: readonly GraphNode[];
  readonly relationships: readonly GraphRelationship[];
}

/**
 * A value read from a graph, as plain JSON-able data. Integers outside JavaScript's safe range come back as
 * decimal strings rather than rounded numbers.
 */
export type GraphValue =
  null | boolean | number | string | readonly GraphValue[] | GraphNode | GraphRelationship | GraphPath | { readonly [key: string]: GraphValue };

/** One result row, keyed by return column. */
export type GraphRecord = { readonly [column: string]: GraphValue };

/** Query parameters: a JSON-able map, referenced as `$name` in the Cypher text. */
export type GraphParameters = Readonly<Record<string, unknown>>;

/** Per-query options. */
export interface GraphQueryOptions {
  /**
   * The return columns, in order: they name the record's values on both adapters. AGE needs them declared; when
   * absent they are derived from a simple RETURN clause (identifiers, `a.b` properties, `expr AS alias`), and Neo4j's
   * own names (the same for such a clause) are used.
   */
  readonly columns?: readonly string[];
  /** Aborts the query: it rejects with the signal's reason and its connection or session is closed. */
  readonly signal?: AbortSignal;
  /**
   * The statement takes a list of rows (`UNWIND $batch AS row`) and finds each row's nodes by an indexed key (`MERGE
   * (n:Label {key: row.key})`): plan it as one index lookup per row. AGE's planner otherwise joins the rows to the
   * key's whole label table by hash once it has statistics, which costs more the bigger the graph; this statement
   * then runs in its own transaction with hash and merge joins off. A statement that is exactly `UNWIND $rows AS row
   * MERGE (n:Label {key: row.key, ...})` with at most SET items `n.p = row.q` after it is written on AGE as one SQL
   * statement on the label table (see ageNodeMergeStatement), the same nodes with the same properties: AGE's MERGE and
   * SET cost grows with the square of a statement's rows. Neo4j plans such lookups by index already.
   */
  readonly lookupRowsByKey?: boolean;
  /**
   * A statement that ends in `CREATE (a)-[:T {key: value, ...}]->(b)` between nodes bound earlier in it (see
   * trailingRelationshipCreate for the exact shape) writes those relationships as rows of the type's table on AGE,
   * the same relationships with the same properties: AGE's CREATE reads the end nodes' whole label tables for every
   * relationship, a cost that grows with the graph. Any other statement runs as written; Neo4j runs every one as written.
   */
  readonly insertTrailingRelationship?: boolean;
}

/** Options of GraphStore.read. */
export interface GraphReadOptions {
  /** The return columns, as GraphQueryOptions.columns. */
  readonly columns?: readonly string[];
  /** Most records answered (at least 1); past it the rest are not read and the result says `truncated`. */
  readonly maxRows: number;
  /**
   * Longest the statement may run, in ms: the store's own limit (Neo4j's transaction timeout, PostgreSQL's
   * statement_timeout) and the wait here, so a store without one (PGlite) still answers in time with a GraphTimeoutError.
   */
  readonly timeoutMs: number;
  /** Aborts the read as GraphQueryOptions.signal does. */
  readonly signal?: AbortSignal;
}

/** What GraphStore.read answers. */
export interface GraphReadResult {
  /** At most maxRows records, in the order the store gave them. */
  readonly records: GraphRecord[];
  /** The statement had more records than maxRows. */
  readonly truncated: boolean;
}

/** Runs statements inside one transaction opened by GraphStore.writeTransaction. */
export interface GraphTransaction {
  /** Runs one statement in the transaction and returns all its records. */
  run(query: string, parameters?: GraphParameters, options?: GraphQueryOptions): Promise<GraphRecord[]>;
  /**
   * Creates many nodes and then many relationships between nodes found by a key property, in a number of statements
   * that depends on the labels and types, not on how many nodes or relationships there are (see GraphBulkCreate).
   */
  createInBulk(write: GraphBulkCreate, options?: Pick<GraphQueryOptions, 'signal'>): Promise<void>;
}

/** A property value of a bulk write; null leaves the property out, as Cypher's CREATE does. */
export type GraphPropertyValue = string | number | boolean | null;

/** The properties of one node or relationship of a bulk write. */
export type GraphProperties = { readonly [key: string]: GraphPropertyValue };

/** Nodes of one label for createInBulk. */
export interface GraphNodeBatch {
  /** An identifier (letters, digits, _). */
  readonly label: string;
  readonly nodes: readonly GraphProperties[];
  /**
   * A key property for nodes shared between writes (tags, say): a node whose value of it is already stored, or comes
   * earlier in `nodes`, is not created again. It should be indexed (ensurePropertyIndexes).
   */
  readonly skipExisting?: string;
  /**
   * The property names its nodes may have (identifiers); a node with another is refused. Optional: without it, the
   * names its nodes have. Declared, the statement's text is the same for every batch of the label, whichever of
   * them these nodes happen to have, so Neo4j plans it once.
   */
  readonly properties?: readonly string[];
}

/** One relationship of a GraphRelationshipBatch: the key values of its two nodes, and its properties. */
export interface GraphRelationshipRow {
  readonly from: string | number;
  readonly to: string | number;
  readonly properties?: GraphProperties;
}

/** Relationships of one type for createInBulk, each from a node of `from.label` to one of `to.label`, found by key. */
export interface GraphRelationshipBatch {
  /** An identifier (letters, digits, _). */
  readonly type: string;
  /** The label of the start nodes and the key property (indexed) they are found by. */
  readonly from: GraphPropertyIndex;
  /** The label of the end nodes and the key property (indexed) they are found by. */
  readonly to: GraphPropertyIndex;
  readonly relationships: readonly GraphRelationshipRow[];
}

/**
 * What GraphTransaction.createInBulk writes: the node batches in order, then the relationship batches, whose nodes may
 * be stored already or created by this write. A relationship whose start or end node is not found is not created (as
 * with MATCH ... CREATE). Neo4j takes one statement per node batch and one per pair of end labels (of whatever types),
 * sent together, and needs Neo4j 5.26 or later (dynamic relationship types); AGE one for the whole write, after
 * making missing label tables (it writes its label tables directly: an AGE CREATE between existing nodes scans their
 * whole label table for each relationship, which no index serves). Property names are identifiers (letters, digits, _).
 */
export interface GraphBulkCreate {
  readonly nodes?: readonly GraphNodeBatch[];
  readonly relationships?: readonly GraphRelationshipBatch[];
}

/** A property of a node label that loom's own statements look nodes up by (`WHERE n.property = value`). */
export interface GraphPropertyIndex {
  /** Node label: an identifier (letters, digits, _). */
  readonly label: string;
  /** Property name: an identifier (letters, digits, _). */
  readonly property: string;
}

/**
 * Properties of a node label that loom's statements look nodes up by together, as `MERGE (n:Label {a: x, b: y})` does:
 * one index over all of them, in this order (see mergeKeys).
 */
export interface GraphNodeKey {
  /** Node label: an identifier (letters, digits, _). */
  readonly label: string;
  /** Property names, at least one: identifiers (letters, digits, _). */
  readonly properties: readonly string[];
}

/** Cypher against one graph database resource; every failure is a LoomError (see errors.ts). */
export interface GraphStore {
  readonly kind: GraphStoreKind;
  /** The resource's `read_only`: writing statements are refused before they are sent. */
  readonly readOnly: boolean;
  /** Runs one statement in its own transaction and returns all its records. */
  run(query: string, parameters?: GraphParameters, options?: GraphQueryOptions): Promise<GraphRecord[]>;
  /**
   * Runs one statement that must not write, whatever the resource's read_only: the store keeps it from writing (a Neo4j
   * session in READ access mode, a PostgreSQL transaction READ ONLY), not a reading of its text, and a write is a
   * GraphReadOnlyError. At most `maxRows` records, within `timeoutMs` (else GraphTimeoutError).
   */
  read(query: string, parameters: GraphParameters, options: GraphReadOptions): Promise<GraphReadResult>;
  /** Runs one statement and yields its records as they are read; leaving the loop early ends the statement. */
  stream(query: string, parameters?: GraphParameters, options?: GraphQueryOptions): AsyncIterable<GraphRecord>;
  /** Runs `work` in one write transaction: committed when it resolves, rolled back when it throws. */
  writeTransaction<T>(work: (tx: GraphTransaction) => Promise<T>): Promise<T>;
  /**
   * Creates the indexes that are missing for equality lookups (`WHERE n.property = value`) of these node properties;
   * idempotent. A GraphNodeKey of several properties gets one index over them all (what a MERGE on them looks up).
   * Index creation is not Cypher on AGE, hence a method of the port. Refused on a read_only resource.
   */
  ensurePropertyIndexes(indexes: readonly (GraphPropertyIndex | GraphNodeKey)[]): Promise<void>;
  /** Closes connections; the store cannot be used afterwards. */
  close(): Promise<void>;
}
