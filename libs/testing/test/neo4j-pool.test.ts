import { connect } from 'node:net';
import neo4j from 'neo4j-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NEO4J_POOL_ENV, startNeo4j, startNeo4jPool, type Neo4jPool, type Neo4jTestServer } from '../src/index.js';

/** How many nodes the server holds. */
async function nodes(server: Neo4jTestServer): Promise<number> {
  const driver = neo4j.driver(server.uri, neo4j.auth.basic(server.user, server.password));
  try {
    const result = await driver.executeQuery('MATCH (n) RETURN count(n) AS nodes');
    return (result.records[0]?.get('nodes') as { toNumber(): number }).toNumber();
  } finally {
    await driver.close();
  }
}

async function write(server: Neo4jTestServer, count: number): Promise<void> {
  const driver = neo4j.driver(server.uri, neo4j.auth.basic(server.user, server.password));
  try {
    await driver.executeQuery('UNWIND range(1, $count) AS i CREATE (:Left {i: i})', { count: neo4j.int(count) });
  } finally {
    await driver.close();
  }
}

/** True when something accepts connections at the server's Bolt port. */
function listening(server: Neo4jTestServer): Promise<boolean> {
  const { hostname, port } = new URL(server.uri);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('the Neo4j pool of a test run', () => {
  let pool: Neo4jPool;
  const outer = process.env[NEO4J_POOL_ENV];

  beforeAll(async () => {
    // a pool of this file's own, so what it started is this file's to count
    pool = await startNeo4jPool();
    process.env[NEO4J_POOL_ENV] = pool.address;
  });
  afterAll(async () => {
    process.env[NEO4J_POOL_ENV] = outer;
    await pool?.close();
  });

  it('lends a server given back to the next borrower, emptied; two at once get two servers; a borrower that dies gives its back', async () => {
    const first = await startNeo4j();
    expect(pool.started).toBe(1);
    await write(first, 7);
    expect(await nodes(first)).toBe(7);
    await first.clear();
    expect(await nodes(first)).toBe(0);
    await write(first, 3);
    await Promise.all([first.close(), first.close()]);
    await expect.poll(() => pool.idle).toBe(1);

    // the same server again, empty; a second borrower meanwhile gets a server of its own
    const [again, second] = await Promise.all([startNeo4j(), startNeo4j()]);
    expect(pool.started).toBe(2);
    expect([again.uri, second.uri]).toContain(first.uri);
    expect(again.uri).not.toBe(second.uri);
    expect(await nodes(again)).toBe(0);
    expect(await nodes(second)).toBe(0);
    await write(second, 5);
    await again.close();
    await expect.poll(() => pool.idle).toBe(1);

    // a borrower whose process dies drops its connection without a word: the pool takes its server back all the same
    const dying = connect(Number(pool.address.split(':')[1]), '127.0.0.1');
    const lent = await new Promise<{ uri: string }>((resolve) =>
      dying.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()) as { uri: string })),
    );
    expect(lent.uri).toBe(again.uri);
    dying.destroy();
    await second.close();
    await expect.poll(() => pool.idle).toBe(2);
    const afterDeath = await Promise.all([startNeo4j(), startNeo4j()]);
    expect(pool.started).toBe(2);
    expect(afterDeath.map((server) => server.uri).sort()).toEqual([again.uri, second.uri].sort());
    for (const server of afterDeath) expect(await nodes(server)).toBe(0);
    await Promise.all(afterDeath.map((server) => server.close()));
  }, 300_000);

  it('close stops every server it started and refuses new loans', async () => {
    const borrowed = await startNeo4j();
    await borrowed.close();
    await Promise.all([pool.close(), pool.close()]);
    expect(await listening(borrowed)).toBe(false);
    await expect(startNeo4j()).rejects.toThrow(/Neo4j pool/);
  }, 180_000);
});
