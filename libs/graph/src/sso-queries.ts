import { FailedPreconditionError, PermissionDeniedError } from '@loom/domain';
import { graphErrorFromNeo4j, type GraphErrorContext, isNeo4jError } from './errors.js';
import { neo4jDriver } from './neo4j-driver.js';
import { type GraphParameters, type GraphRecord } from './graph-store.js';
import { NEO4J_DRIVER_CONFIG, type Neo4jDriverFactory, type Neo4jDriverLike, type Neo4jSessionConfig } from './neo4j-store.js';
import { fromNeo4j, toNeo4jParameters } from './neo4j-values.js';

/** The graph database that single sign-on queries run on, and how a query takes its user's identity. */
export interface SsoGraphConnection {
  readonly url: string;
  /**
   * `impersonate`: loom's service account (`user`, `password`) opens each session impersonating the
   * token's user, so the server applies that user's roles; `bearer`: the user's own token is the
   * session's credential, for a server configured for OIDC.
   */
  readonly mode: 'impersonate' | 'bearer';
  readonly user?: string;
  readonly password?: string;
  readonly database?: string;
}

/** Who a query runs as: the user the token proved, and the token itself (for bearer mode). */
export interface SsoCaller {
  readonly user: string;
  readonly token: string;
}

/** The database refused the caller's identity or role for this query. */
export class GraphPermissionDeniedError extends PermissionDeniedError {
  constructor(
    readonly code: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`the graph database refused the query for this user: ${reason}`, options);
  }
}

/**
 * The graph database cannot take a caller's identity the configured way: Neo4j Community Edition has no impersonation
 * (`impersonate` needs Enterprise Edition), and a server without an identity-provider plugin accepts no bearer tokens.
 * Retrying will not help; the server or `loom.graph.sso.mode` must change.
 */
export class GraphSsoModeUnsupportedError extends FailedPreconditionError {
  constructor(
    readonly mode: SsoGraphConnection['mode'],
    readonly address: string,
    /** The server's code for its refusal. */
    readonly code: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`single sign-on mode ${mode} is not available on the graph database at ${address}: ${reason}`, options);
  }
}

// Neo4j's security codes: a missing privilege, an expired or refused credential, impersonation refused
const NEO4J_SECURITY = /^Neo\.ClientError\.Security\./;
// what Neo4j says when it has no such feature; neither refusal has a code of its own
const NO_IMPERSONATION = /impersonation is not supported/i;
const NO_BEARER = /scheme 'bearer' is not supported/i;

/** Runs Cypher on the single sign-on database under each caller's own identity, never as the service account. */
export class SsoGraphQueries {
  private readonly driver: Neo4jDriverLike;
  private readonly context: GraphErrorContext;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly connection: SsoGraphConnection,
    options: { readonly driverFactory?: Neo4jDriverFactory } = {},
  ) {
    const factory = options.driverFactory ?? ((url, auth, config) => neo4jDriver().driver(url, auth, config));
    const auth = connection.mode === 'impersonate' ? neo4jDriver().auth.basic(connection.user ?? '', connection.password ?? '') : neo4jDriver().auth.bearer('');
    this.driver = factory(connection.url, auth, NEO4J_DRIVER_CONFIG);
    const address = connection.database === undefined ? connection.url : `${connection.url} database ${connection.database}`;
    this.context = { store: 'neo4j', address, password: connection.password ?? '', readOnly: false };
  }

  /** Runs one auto-commit query as the caller; READ access unless `write`. */
  async run(query: string, parameters: GraphParameters, caller: SsoCaller, options: { readonly write?: boolean } = {}): Promise<GraphRecord[]> {
    const session = this.driver.session(this.sessionConfig(caller, options.write === true));
    try {
      const records: GraphRecord[] = [];
      for await (const record of session.run(query, toNeo4jParameters(parameters))) {
        const row: Record<string, GraphRecord[string]> = {};
        for (const key of record.keys) row[String(key)] = fromNeo4j(record.get(String(key)));
        records.push(row);
      }
      return records;
    } catch (error) {
      if (isNeo4jError(error)) {
        const message = caller.token === '' ? error.message : error.message.replaceAll(caller.token, '[token]');
        const unsupported = this.unsupportedMode(error.code, message, error);
        if (unsupported !== undefined) throw unsupported;
        if (NEO4J_SECURITY.test(error.code)) throw new GraphPermissionDeniedError(error.code, message, { cause: error });
      }
      throw graphErrorFromNeo4j(error, { ...this.context, password: caller.token });
    } finally {
      // a session that fails to close has already failed the query or returned its records
      await session.close().catch(() => undefined);
    }
  }

  close(): Promise<void> {
    this.closing ??= this.driver.close();
    return this.closing;
  }

  /** The server's refusal of the configured mode itself (not of this caller), as GraphSsoModeUnsupportedError. */
  private unsupportedMode(code: string, message: string, cause: unknown): GraphSsoModeUnsupportedError | undefined {
    const { mode } = this.connection;
    if (mode === 'impersonate' && NO_IMPERSONATION.test(message)) {
      const reason = `Neo4j Community Edition has no impersonation, which mode impersonate needs (Enterprise Edition); the server said: ${message}`;
      return new GraphSsoModeUnsupportedError(mode, this.context.address, code, reason, { cause });
    }
    if (mode === 'bearer' && NO_BEARER.test(message)) {
      const reason =
        'the server accepts no bearer tokens: mode bearer needs an identity-provider (OIDC) plugin, which Neo4j Community Edition cannot load; ' +
        `the server said: ${message}`;
      return new GraphSsoModeUnsupportedError(mode, this.context.address, code, reason, { cause });
    }
    return undefined;
  }

  private sessionConfig(caller: SsoCaller, write: boolean): Neo4jSessionConfig {
    const base = {
      defaultAccessMode: write ? ('WRITE' as const) : ('READ' as const),
      ...(this.connection.database === undefined ? {} : { database: this.connection.database }),
    };
    return this.connection.mode === 'impersonate' ? { ...base, impersonatedUser: caller.user } : { ...base, auth: neo4jDriver().auth.bearer(caller.token) };
  }
}
