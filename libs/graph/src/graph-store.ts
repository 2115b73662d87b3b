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
}

/** Runs statements inside one transaction opened by GraphStore.writeTransaction. */
export interface GraphTransaction {
  /** Runs one statement in the transaction and returns all its records. */
  run(query: string, parameters?: GraphParameters, options?: GraphQueryOptions): Promise<GraphRecord[]>;
}

/** A property of a node label that loom's own statements look nodes up by (`WHERE n.property = value`). */
export interface GraphPropertyIndex {
  /** Node label: an identifier (letters, digits, _). */
  readonly label: string;
  /** Property name: an identifier (letters, digits, _). */
  readonly property: string;
}

/** Cypher against one graph database resource; every failure is a LoomError (see errors.ts). */
export interface GraphStore {
  readonly kind: GraphStoreKind;
  /** The resource's `read_only`: writing statements are refused before they are sent. */
  readonly readOnly: boolean;
  /** Runs one statement in its own transaction and returns all its records. */
  run(query: string, parameters?: GraphParameters, options?: GraphQueryOptions): Promise<GraphRecord[]>;
  /** Runs one statement and yields its records as they are read; leaving the loop early ends the statement. */
  stream(query: string, parameters?: GraphParameters, options?: GraphQueryOptions): AsyncIterable<GraphRecord>;
  /** Runs `work` in one write transaction: committed when it resolves, rolled back when it throws. */
  writeTransaction<T>(work: (tx: GraphTransaction) => Promise<T>): Promise<T>;
  /**
   * Creates the indexes that are missing for equality lookups (`WHERE n.property = value`) of these node properties;
   * idempotent. Index creation is not Cypher on AGE, hence a method of the port. Refused on a read_only resource.
   */
  ensurePropertyIndexes(indexes: readonly GraphPropertyIndex[]): Promise<void>;
  /** Closes connections; the store cannot be used afterwards. */
  close(): Promise<void>;
}
