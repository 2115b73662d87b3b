import { type QueryGraphRequest, type QueryGraphResponse } from '@loom/contracts';
import { type GraphSsoConfig } from '@loom/config';
import { FailedPreconditionError, ValidationError } from '@loom/domain';
import { type GraphRecord, type Neo4jDriverFactory, SsoGraphQueries } from '@loom/graph';
import {
  databaseRoles,
  type IdentityProviderConfig,
  IdentityProviderConfigError,
  readIdentityProviderConfig,
  TokenRejectedError,
  TokenValidator,
  type TokenValidatorOptions,
} from '@loom/identity';
import { type Logger } from '@loom/telemetry';

/** What QueryGraph needs: the provider's tokens checked, and the database reached as each user. */
export interface GraphSsoQueryOptions {
  readonly logger: Logger;
  readonly driverFactory?: Neo4jDriverFactory;
  readonly validatorOptions?: TokenValidatorOptions;
}

/**
 * Serves QueryGraph: validates the caller's access token against the graph database's identity
 * provider and runs the query as that user. The single sign-on resource is for this interactive
 * use only; a workflow can never name it (refused at push).
 */
export class GraphSsoQuery {
  private readonly validator: TokenValidator;
  private readonly queries: SsoGraphQueries;

  constructor(
    config: GraphSsoConfig,
    private readonly options: GraphSsoQueryOptions,
  ) {
    let provider: IdentityProviderConfig;
    try {
      provider = readIdentityProviderConfig(config.providerConfigFile);
    } catch (error) {
      if (!(error instanceof IdentityProviderConfigError)) throw error;
      throw new FailedPreconditionError(`loom.graph.sso.providerConfigFile ${error.message}`, { cause: error });
    }
    this.validator = new TokenValidator(provider, options.validatorOptions);
    const { providerConfigFile: _file, uri: url, ...connection } = config;
    this.queries = new SsoGraphQueries({ url, ...connection }, options.driverFactory === undefined ? {} : { driverFactory: options.driverFactory });
  }

  async handle(request: QueryGraphRequest): Promise<QueryGraphResponse> {
    if (request.query.trim() === '') throw ValidationError.of('query', 'is required', 'MISSING_FIELD');
    let identity;
    try {
      identity = await this.validator.verify(request.accessToken);
    } catch (error) {
      // the reason goes to the log only: telling a caller why a forged token failed helps the forger
      if (error instanceof TokenRejectedError) this.options.logger.warn({ reason: error.reason }, 'QueryGraph: access token refused');
      throw error;
    }
    const records = await this.queries.run(
      request.query,
      request.parameters ?? {},
      { user: identity.user, token: request.accessToken },
      { write: request.write },
    );
    return {
      columns: columnsOf(records),
      rows: records,
      user: identity.user,
      databaseRoles: databaseRoles(identity.roles),
    };
  }

  close(): Promise<void> {
    return this.queries.close();
  }
}

function columnsOf(records: readonly GraphRecord[]): string[] {
  return records[0] === undefined ? [] : Object.keys(records[0]);
}
