import { FailedPreconditionError, RESOURCE_KINDS, ValidationError } from '@loom/domain';
import { createAgeStore, type AgeStoreOptions } from './age-store.js';
import { type GraphStore } from './graph-store.js';
import { createNeo4jStore, type Neo4jDriverFactory } from './neo4j-store.js';
import { ageConnection, neo4jConnection } from './parameters.js';

/** What openGraphStore needs of a resource instance: its kind and its (decrypted) parameters. */
export interface GraphResource {
  readonly resource: { readonly qualifiedName: string };
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** Options of openGraphStore. */
export interface OpenGraphStoreOptions {
  /** Makes the Neo4j driver; tests pass a recording one. Default: neo4j-driver's `neo4j.driver`. */
  readonly neo4jDriverFactory?: Neo4jDriverFactory;
  /** Options for an AGE resource. */
  readonly age?: AgeStoreOptions;
}

/**
 * Opens the GraphStore for a graph database resource, picking the adapter by its kind. The SSO kind is refused
 * (FailedPreconditionError: interactive use only), a bad parameter is a ValidationError naming `parameters.<name>`.
 * Nothing connects until the first query.
 */
export function openGraphStore(resource: GraphResource, options: OpenGraphStoreOptions = {}): GraphStore {
  const kind = resource.resource.qualifiedName;
  switch (kind) {
    case RESOURCE_KINDS.NEO4J_DATABASE:
      return createNeo4jStore(
        neo4jConnection(resource.parameters),
        options.neo4jDriverFactory === undefined ? {} : { driverFactory: options.neo4jDriverFactory },
      );
    case RESOURCE_KINDS.AGE_DATABASE:
      return createAgeStore(ageConnection(resource.parameters), options.age);
    case RESOURCE_KINDS.GRAPH_SSO_DATABASE:
      throw new FailedPreconditionError(
        `a resource of the single sign-on graph kind (${kind}) is for interactive use only and cannot be opened as a graph store`,
      );
    default:
      throw ValidationError.of(
        'resource.qualifiedName',
        `'${kind}' is not a graph database kind (${RESOURCE_KINDS.NEO4J_DATABASE} or ${RESOURCE_KINDS.AGE_DATABASE})`,
      );
  }
}
