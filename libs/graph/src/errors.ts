import { type ErrorKind, FailedPreconditionError, LoomError, UnavailableError } from '@loom/domain';
import { NETWORK_ERROR_CODES, redactPassword } from '@loom/postgres';
import type { Neo4jError } from 'neo4j-driver';
import { neo4jDriverIfLoaded } from './neo4j-driver.js';
import { type GraphStoreKind } from './graph-store.js';

/**
 * The base of the graph store errors of one kind: which store, its address and the store's own code; each subclass
 * words the message (`describe`). Whether it is retryable is its kind's (LoomError): unavailable ones are, failed
 * preconditions are not.
 */
// a function of the domain error class, not one class, because a class has one parent and every graph error stays an
// instance of the domain class of its kind (FailedPreconditionError, UnavailableError), as callers catch them
function graphStoreError<Kind extends ErrorKind>(
  DomainError: abstract new (message: string, options?: { cause?: unknown }) => LoomError & { readonly kind: Kind },
) {
  abstract class GraphStoreError extends DomainError {
    constructor(
      readonly store: GraphStoreKind,
      readonly address: string,
      /** The store's own code (SQLSTATE, Neo4j status code), when it gave one. */
      readonly code: string | undefined,
      reason: string,
      options?: { cause?: unknown },
    ) {
      super(new.target.describe(store, address, reason), options);
    }

    /** The message of an error of this class. */
    static describe(store: GraphStoreKind, address: string, reason: string): string {
      return `${store} ${address}: ${reason}`;
    }
  }
  return GraphStoreError;
}

/** A time limit ran out; a domain class of its kind for graphStoreError, as the others are. */
abstract class DeadlineError extends LoomError {
  readonly kind = 'deadline-exceeded';
}

const GraphPreconditionError = graphStoreError(FailedPreconditionError);
const GraphUnavailabilityError = graphStoreError(UnavailableError);
const GraphDeadlineError = graphStoreError(DeadlineError);

/** The store refused the statement (syntax, constraint, unknown graph) or it cannot be sent as written; retrying will not help. */
export class GraphQueryError extends GraphPreconditionError {
  static override describe(store: GraphStoreKind, address: string, reason: string): string {
    return `query failed on ${store} ${address}: ${reason}`;
  }
}

/** The store cannot be reached or dropped the connection (refused, reset, timed out, shutting down); transient. */
export class GraphUnavailableError extends GraphUnavailabilityError {
  static override describe(store: GraphStoreKind, address: string, reason: string): string {
    return `${store} ${address} is unavailable: ${reason}`;
  }
}

/** The statement lost a race the store reports as retryable (deadlock, serialization failure, leader switch); transient. */
export class GraphTransientError extends GraphUnavailabilityError {
  static override describe(store: GraphStoreKind, address: string, reason: string): string {
    return `transient failure on ${store} ${address} (retrying may succeed): ${reason}`;
  }
}

/** A read_only resource refused a write: before sending it (`clause` names the writing clause) or, as a second fence, the store did. */
export class GraphReadOnlyError extends GraphPreconditionError {
  constructor(
    store: GraphStoreKind,
    address: string,
    /** The writing clause found in the query (`CREATE`, `CALL db.create`...), when that was the reason. */
    readonly clause: string | undefined,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(store, address, undefined, reason, options);
  }

  static override describe(store: GraphStoreKind, address: string, reason: string): string {
    return `${store} ${address} is read_only: ${reason}`;
  }

  /** The query has a writing clause; nothing was sent. */
  static forClause(store: GraphStoreKind, address: string, clause: string): GraphReadOnlyError {
    return new GraphReadOnlyError(store, address, clause, `refused a query with the writing clause ${clause} before sending it`);
  }
}

/** A read ran past its time limit (GraphStore.read): the store cancelled it (statement_timeout, Neo4j's transaction timeout) or loom stopped waiting. */
export class GraphTimeoutError extends GraphDeadlineError {
  static override describe(store: GraphStoreKind, address: string, reason: string): string {
    return `query on ${store} ${address} ran past its time limit: ${reason}`;
  }
}

/** The store was closed; a programming error in the caller, not a property of the database. */
export class GraphStoreClosedError extends GraphPreconditionError {
  constructor(store: GraphStoreKind, address: string) {
    super(store, address, undefined, 'closed');
  }

  static override describe(store: GraphStoreKind, address: string): string {
    return `the ${store} graph store for ${address} is closed`;
  }
}

/** True when retrying the same statement later may succeed: GraphUnavailableError, GraphTransientError, or a raw store error of that sort. */
export function isTransientGraphError(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth++) {
    if (current instanceof GraphPreconditionError || current instanceof GraphUnavailabilityError) return current.retryable;
    if (current instanceof LoomError) return false;
    if (isNeo4jError(current)) return neo4jDriverIfLoaded()?.isRetryableError(current) ?? false;
    const code = errorCode(current);
    if (code !== undefined && (TRANSIENT_SQLSTATES.test(code) || UNAVAILABLE_SQLSTATES.test(code) || NETWORK_ERROR_CODES.has(code))) return true;
  }
  return false;
}

/** Where an error happened, for messages; the password is only used to redact it from them. */
export interface GraphErrorContext {
  readonly store: GraphStoreKind;
  readonly address: string;
  readonly password: string;
  readonly readOnly: boolean;
  /** The statement runs under a time limit of GraphStore.read (Neo4j): the server ending it for that is a GraphTimeoutError. */
  readonly timeLimited?: boolean;
}

// SQLSTATE: serialization failure, deadlock, lock not available
const TRANSIENT_SQLSTATES = /^(40001|40P01|55P03)$/;
// SQLSTATE: class 08 connection exception, admin/crash shutdown, cannot connect now, too many connections
const UNAVAILABLE_SQLSTATES = /^(08...|57P0[123]|53300)$/;
const READ_ONLY_TRANSACTION = '25006';
// what pg says (without a code) when the socket went away under a query or a connect
const CONNECTION_LOST_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|not queryable|Client has encountered a connection error/i;
const NEO4J_ACCESS_MODE = 'Neo.ClientError.Statement.AccessMode';
// Neo.ClientError.Transaction.TransactionTimedOut, …TransactionTimedOutClientConfiguration (the client's own timeout),
// and the transient code older servers gave it
const NEO4J_TIMED_OUT = /\.Transaction\.TransactionTimedOut/;
const QUERY_CANCELED = '57014';
const NEO4J_UNAVAILABLE_CODES = new Set(['ServiceUnavailable', 'SessionExpired']);

/** True for an error of neo4j-driver (which, when the driver was never loaded, none can be). */
export function isNeo4jError(error: unknown): error is Neo4jError {
  const driver = neo4jDriverIfLoaded();
  return driver !== undefined && error instanceof driver.Neo4jError;
}

/** Turns an error from `pg` into the matching graph error; LoomErrors pass through unchanged. */
export function graphErrorFromPg(error: unknown, context: GraphErrorContext): Error {
  if (!(error instanceof Error)) return new GraphQueryError(context.store, context.address, undefined, String(error));
  if (error instanceof LoomError) return error;
  const code = errorCode(error);
  const reason = redactPassword(error.message, context.password);
  const { store, address } = context;
  if (code !== undefined && TRANSIENT_SQLSTATES.test(code)) return new GraphTransientError(store, address, code, reason, { cause: error });
  if ((code !== undefined && (UNAVAILABLE_SQLSTATES.test(code) || NETWORK_ERROR_CODES.has(code))) || CONNECTION_LOST_MESSAGES.test(error.message)) {
    return new GraphUnavailableError(store, address, code, reason, { cause: error });
  }
  if (code === READ_ONLY_TRANSACTION && context.readOnly)
    return new GraphReadOnlyError(store, address, undefined, `the store refused a write in a read-only transaction: ${reason}`, { cause: error });
  return new GraphQueryError(store, address, code, reason, { cause: error });
}

/**
 * A failure of GraphStore.read on AGE as the store meant it: a write its READ ONLY transaction refused (25006) is a
 * GraphReadOnlyError, a statement its statement_timeout cancelled (57014) a GraphTimeoutError; others pass unchanged.
 */
export function ageReadFailure(error: unknown, context: GraphErrorContext): unknown {
  if (!(error instanceof GraphQueryError) || !(error.cause instanceof Error)) return error;
  const reason = redactPassword(error.cause.message, context.password);
  if (error.code === READ_ONLY_TRANSACTION) {
    return new GraphReadOnlyError(context.store, context.address, undefined, `the store refused a write in a read-only transaction: ${reason}`, {
      cause: error.cause,
    });
  }
  if (error.code === QUERY_CANCELED)
    return new GraphTimeoutError(context.store, context.address, error.code, `the store cancelled it: ${reason}`, { cause: error.cause });
  return error;
}

/** Turns an error from neo4j-driver into the matching graph error, using the driver's own retryability. */
export function graphErrorFromNeo4j(error: unknown, context: GraphErrorContext): Error {
  if (!(error instanceof Error)) return new GraphQueryError(context.store, context.address, undefined, String(error));
  if (error instanceof LoomError) return error;
  const { store, address } = context;
  const code = isNeo4jError(error) ? error.code : errorCode(error);
  // Neo4j's syntax errors go on with the query and a caret on lines of their own: the reason is the first line, as
  // AGE's is (the whole text stays in the cause)
  const reason = redactPassword(isNeo4jError(error) ? firstLine(error.message) : error.message, context.password);
  if (isNeo4jError(error)) {
    if (NEO4J_UNAVAILABLE_CODES.has(error.code)) return new GraphUnavailableError(store, address, code, reason, { cause: error });
    if (NEO4J_TIMED_OUT.test(error.code) && context.timeLimited)
      return new GraphTimeoutError(store, address, code, `the store ended it: ${reason}`, { cause: error });
    if (neo4jDriverIfLoaded()?.isRetryableError(error) === true) return new GraphTransientError(store, address, code, reason, { cause: error });
    if (error.code === NEO4J_ACCESS_MODE && context.readOnly)
      return new GraphReadOnlyError(store, address, undefined, `the store refused a write in read access mode: ${reason}`, { cause: error });
    return new GraphQueryError(store, address, code, reason, { cause: error });
  }
  if (code !== undefined && NETWORK_ERROR_CODES.has(code)) return new GraphUnavailableError(store, address, code, reason, { cause: error });
  return error;
}

function firstLine(message: string): string {
  const line = message.split('\n', 1)[0]!.trim();
  return line === '' ? message.trim() : line;
}

function errorCode(error: Error): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}
