// Vitest's global setup for every package (vitest.shared.ts): one pool of Neo4j servers for the package's test run,
// which startNeo4j borrows from (LOOM_NEO4J_POOL). A file holds its server from beforeAll to afterAll and gets it
// empty; the pool starts a JVM only when a file asks and none is free, so a run starts as many as files used Neo4j at
// once (at most the run's workers), not one a file, and a package that never asks starts none.
import { NEO4J_POOL_ENV, startNeo4jPool } from '@loom/testing';

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  // a pool named from outside (an outer run's) is used as it is
  if (process.env[NEO4J_POOL_ENV] !== undefined && process.env[NEO4J_POOL_ENV] !== '') return undefined;
  const pool = await startNeo4jPool();
  process.env[NEO4J_POOL_ENV] = pool.address;
  return async () => {
    delete process.env[NEO4J_POOL_ENV];
    if (pool.started > 0) console.log(`Neo4j pool: ${pool.started} server(s) started for this run`);
    await pool.close();
  };
}
