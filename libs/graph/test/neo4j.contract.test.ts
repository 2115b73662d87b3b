import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe } from 'vitest';
import { openGraphStore } from '../src/index.js';
import { describeGraphStoreContract } from './graph-contract.js';
import { neo4jResource, startTestNeo4j, type TestNeo4j } from './harness.js';

// the same contract the AGE adapter passes, on a real Neo4j: LOOM_TEST_NEO4J_URI's, else one started for this file
describe('GraphStore on a real Neo4j', () => {
  let neo4j: TestNeo4j;
  beforeAll(async () => {
    neo4j = await startTestNeo4j();
  });
  afterAll(async () => {
    await neo4j?.close();
  });

  // labels unique to this run, so a shared server's other data is neither seen nor touched
  const prefix = `Loom${randomBytes(4).toString('hex')}_`;
  describeGraphStoreContract('GraphStore contract on Neo4j', () => ({
    prefix,
    open: ({ readOnly }) =>
      openGraphStore(
        neo4jResource({
          host: neo4j.uri,
          user: neo4j.user,
          password: neo4j.password,
          read_only: readOnly,
          ...(neo4j.database === undefined ? {} : { database: neo4j.database }),
        }),
      ),
  }));
});
