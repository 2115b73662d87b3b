import { randomBytes } from 'node:crypto';
import neo4jDriver from 'neo4j-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    // a shared server keeps no index of this run either (the embedded one goes away whole)
    if (neo4j !== undefined && process.env['LOOM_TEST_NEO4J_URI']) {
      const driver = neo4jDriver.driver(neo4j.uri, neo4jDriver.auth.basic(neo4j.user, neo4j.password));
      try {
        const { records } = await driver.executeQuery(
          'SHOW INDEXES YIELD name WHERE name STARTS WITH $start RETURN name',
          { start: `loom_${prefix}` },
          database(),
        );
        for (const record of records) await driver.executeQuery(`DROP INDEX \`${String(record.get('name'))}\``, {}, database());
      } finally {
        await driver.close();
      }
    }
    await neo4j?.close();
  });

  const database = (): { database?: string } => (neo4j.database === undefined ? {} : { database: neo4j.database });

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
          ...database(),
        }),
      ),
  }));

  describe('what only Neo4j does', () => {
    it('a MATCH after a CREATE in one statement sees the created nodes (AGE sees none, and loses the CREATE: age-store.test.ts)', async () => {
      const store = openGraphStore(neo4jResource({ host: neo4j.uri, user: neo4j.user, password: neo4j.password, ...database() }));
      try {
        const seen = `${prefix}Seen`;
        await store.run(
          `UNWIND ['s1', 's2'] AS s CREATE (:${seen} {id: s}) WITH count(*) AS created MATCH (a:${seen} {id: 's1'}), (b:${seen} {id: 's2'}) CREATE (a)-[:NEXT]->(b)`,
        );
        expect(await store.run(`MATCH (:${seen})-[r:NEXT]->(:${seen}) RETURN count(r) AS c`)).toEqual([{ c: 1 }]);
        await store.run(`MATCH (n:${seen}) DETACH DELETE n`);
      } finally {
        await store.close();
      }
    });

    it("a batch MERGE on an indexed key is planned as an index seek a row, not a scan of the label (the graph writer's UNWIND statement)", async () => {
      const store = openGraphStore(neo4jResource({ host: neo4j.uri, user: neo4j.user, password: neo4j.password, ...database() }));
      const driver = neo4jDriver.driver(neo4j.uri, neo4jDriver.auth.basic(neo4j.user, neo4j.password));
      const label = `${prefix}Planned`;
      try {
        await store.ensurePropertyIndexes([{ label, property: 'id' }]);
        await driver.executeQuery('CALL db.awaitIndexes(60)', {}, database());
        const { summary } = await driver.executeQuery(
          `EXPLAIN UNWIND $batch AS row MERGE (p:${label} {id: row.id}) SET p.name = row.name`,
          { batch: [{ id: 'a', name: 'A' }] },
          database(),
        );
        const operators: string[] = [];
        const walk = (plan: { operatorType: string; children: readonly unknown[] }): void => {
          operators.push(plan.operatorType);
          for (const child of plan.children) walk(child as typeof plan);
        };
        walk(summary.plan as unknown as { operatorType: string; children: readonly unknown[] });
        expect(operators.some((operator) => operator.startsWith('NodeIndexSeek'))).toBe(true);
        expect(operators.filter((operator) => operator.startsWith('NodeByLabelScan') || operator.startsWith('AllNodesScan'))).toEqual([]);
      } finally {
        await driver.close();
        await store.close();
      }
    });

    it('ensurePropertyIndexes makes one index per label and property, also where joining them with _ would give one name', async () => {
      const store = openGraphStore(neo4jResource({ host: neo4j.uri, user: neo4j.user, password: neo4j.password, ...database() }));
      const driver = neo4jDriver.driver(neo4j.uri, neo4jDriver.auth.basic(neo4j.user, neo4j.password));
      try {
        const labels = [`${prefix}A_b`, `${prefix}A`];
        await store.ensurePropertyIndexes([
          { label: labels[0]!, property: 'c' },
          { label: labels[1]!, property: 'b_c' },
        ]);
        const { records } = await driver.executeQuery(
          'SHOW INDEXES YIELD name, labelsOrTypes, properties WHERE labelsOrTypes[0] IN $labels RETURN name, labelsOrTypes[0] AS label, properties[0] AS property ORDER BY name',
          { labels },
          database(),
        );
        expect(records.map((record) => record.toObject())).toEqual([
          { name: `loom_${labels[1]}.b_c`, label: labels[1], property: 'b_c' },
          { name: `loom_${labels[0]}.c`, label: labels[0], property: 'c' },
        ]);
        for (const record of records) await driver.executeQuery(`DROP INDEX \`${String(record.get('name'))}\``, {}, database());
      } finally {
        await driver.close();
        await store.close();
      }
    });
  });
});
