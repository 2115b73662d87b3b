import { createRequire } from 'node:module';
import type * as Neo4jDriverModule from 'neo4j-driver';

/** neo4j-driver's exports (`driver`, `auth`, `int`, `isNode`, `Neo4jError`, …). */
export type Neo4jDriverExports = typeof Neo4jDriverModule;

const require = createRequire(import.meta.url);
let loaded: Neo4jDriverExports | undefined;

/**
 * neo4j-driver, loaded on first use. With rxjs it is about 90 modules and 0.1 s of every process
 * start, and a loom without a Neo4j resource never needs it. The package is CommonJS only, so
 * this require and any `import` of it share one module instance (and its classes).
 */
export function neo4jDriver(): Neo4jDriverExports {
  loaded ??= require('neo4j-driver') as Neo4jDriverExports;
  return loaded;
}

/**
 * neo4j-driver if this process loaded it already (here or through an import elsewhere), else
 * undefined: an error can only be one of its errors if it was loaded.
 */
export function neo4jDriverIfLoaded(): Neo4jDriverExports | undefined {
  if (loaded === undefined && require.cache[require.resolve('neo4j-driver')] !== undefined) loaded = neo4jDriver();
  return loaded;
}
