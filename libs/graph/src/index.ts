export {
  type GraphStore,
  type GraphStoreKind,
  type GraphTransaction,
  type GraphRecord,
  type GraphValue,
  type GraphNode,
  type GraphRelationship,
  type GraphPath,
  type GraphParameters,
  type GraphQueryOptions,
  type GraphReadOptions,
  type GraphReadResult,
  type GraphPropertyIndex,
  type GraphNodeKey,
  type GraphBulkCreate,
  type GraphNodeBatch,
  type GraphRelationshipBatch,
  type GraphRelationshipRow,
  type GraphProperties,
  type GraphPropertyValue,
} from './graph-store.js';
export {
  GraphQueryError,
  GraphUnavailableError,
  GraphTransientError,
  GraphReadOnlyError,
  GraphStoreClosedError,
  GraphTimeoutError,
  isTransientGraphError,
} from './errors.js';
export { openGraphStore, type GraphResource, type OpenGraphStoreOptions } from './open-graph-store.js';
export {
  createNeo4jStore,
  NEO4J_DRIVER_CONFIG,
  type Neo4jStoreOptions,
  type Neo4jDriverFactory,
  type Neo4jDriverLike,
  type Neo4jSessionLike,
  type Neo4jSessionConfig,
  type Neo4jTransactionLike,
  type Neo4jRecordLike,
} from './neo4j-store.js';
export { createAgeStore, type AgeStoreOptions } from './age-store.js';
export { listAgeGraphs } from './age-graphs.js';
export { lastEmbeddedGraphPort, startEmbeddedGraph, type EmbeddedGraphOptions } from './embedded-graph.js';
export { neo4jConnection, ageConnection, type Neo4jConnection, type AgeConnection } from './parameters.js';
export { findWritingClause, deriveReturnColumns, fieldsRead, toBatchQuery, mergeKeys, type DerivedColumns } from './cypher-text.js';
export { withProvenance, ProvenanceRewriteError, PROVENANCE_PREFIX, PROVENANCE_PROPERTIES, type ProvenanceProperty } from './provenance.js';
export { parseAgtype, AgtypeSyntaxError } from './agtype.js';
export { SsoGraphQueries, GraphPermissionDeniedError, GraphSsoModeUnsupportedError, type SsoGraphConnection, type SsoCaller } from './sso-queries.js';
