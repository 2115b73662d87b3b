import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openGraphStore, SsoGraphQueries } from '../src/index.js';
import { describeGraphStoreContract } from './graph-contract.js';
import { neo4jResource } from './harness.js';

// the same contract the AGE adapter passes, against a real Neo4j server when one is configured
const uri = process.env['LOOM_TEST_NEO4J_URI'] || undefined;
const user = process.env['LOOM_TEST_NEO4J_USER'] || 'neo4j';
const password = process.env['LOOM_TEST_NEO4J_PASSWORD'] ?? '';
const database = process.env['LOOM_TEST_NEO4J_DATABASE'] || undefined;

if (uri === undefined) {
  console.warn(
    'neo4j.contract.test.ts: the Neo4j contract tests are skipped because LOOM_TEST_NEO4J_URI is not set ' +
      '(set it, e.g. bolt://127.0.0.1:7687, with LOOM_TEST_NEO4J_USER and LOOM_TEST_NEO4J_PASSWORD, to run them against a real server)',
  );
}

describe.skipIf(uri === undefined)('against the Neo4j server at LOOM_TEST_NEO4J_URI', () => {
  // labels unique to this run, so a shared server's other data is neither seen nor touched
  const prefix = `Loom${randomBytes(4).toString('hex')}_`;
  describeGraphStoreContract('GraphStore contract on Neo4j', () => ({
    prefix,
    open: ({ readOnly }) => openGraphStore(neo4jResource({ host: uri, user, password, read_only: readOnly, ...(database === undefined ? {} : { database }) })),
  }));
});

describe.skipIf(uri === undefined)('single sign-on impersonation against LOOM_TEST_NEO4J_URI', () => {
  it('runs a query as the impersonated user (LOOM_TEST_NEO4J_USER impersonating itself needs no extra privilege)', async () => {
    const queries = new SsoGraphQueries({ url: uri ?? '', mode: 'impersonate', user, password, ...(database === undefined ? {} : { database }) });
    try {
      const [row] = await queries.run('SHOW CURRENT USER YIELD user RETURN user', {}, { user, token: '' });
      expect(row?.user).toBe(user);
    } finally {
      await queries.close();
    }
  });
});
