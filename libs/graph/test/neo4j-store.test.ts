import { Neo4jError, Record as Neo4jRecord, int, types } from 'neo4j-driver';
import { describe, expect, it } from 'vitest';
import { GraphQueryError, GraphReadOnlyError, GraphTransientError, GraphUnavailableError, isTransientGraphError, openGraphStore } from '../src/index.js';
import { neo4jResource } from './harness.js';
import { RecordingDriver } from '../src/testing.js';

// checked at the driver boundary: a recording driver stands in for neo4j-driver (there is no Neo4j server here);
// test/neo4j.contract.test.ts runs the shared contract against a real one when LOOM_TEST_NEO4J_URI is set

function open(parameters: Record<string, unknown>) {
  const driver = new RecordingDriver();
  const store = openGraphStore(neo4jResource(parameters), { neo4jDriverFactory: driver.factory });
  return { driver, store };
}

const ann = new types.Node(int(17), ['Person'], { name: 'Ann', age: int(42) }, '4:db1:17');
const bob = new types.Node(int(18), ['Person'], { name: 'Bob', visits: int('9007199254740993') }, '4:db1:18');
const knows = new types.Relationship(int(3), int(17), int(18), 'KNOWS', { since: int(2020), weight: 0.5 }, '5:db1:3', '4:db1:17', '4:db1:18');

describe('neo4j adapter (recording driver)', () => {
  it('sends a write with its exact Cypher, parameters, database and WRITE access mode, with driver retries off', async () => {
    const { driver, store } = open({ host: 'graph.example.com', port: 7688, database: 'movies' });
    driver.answerWith(() => [new Neo4jRecord(['p'], [ann])]);

    const records = await store.run('CREATE (p:Person {name: $name, age: $age, score: $score}) RETURN p', { name: 'Ann', age: 42, score: 0.75 });

    expect(driver.created).toEqual([
      {
        url: 'bolt://graph.example.com:7688',
        auth: { scheme: 'basic', principal: 'neo4j', credentials: 's3cret-pw' },
        config: expect.objectContaining({ maxTransactionRetryTime: 0, disableAutoCommitRetries: true }),
      },
    ]);
    expect(driver.sent).toEqual([
      {
        via: 'auto-commit',
        database: 'movies',
        accessMode: 'WRITE',
        query: 'CREATE (p:Person {name: $name, age: $age, score: $score}) RETURN p',
        // whole numbers go as Integers (the driver would send 42 as the float 42.0), fractions as floats
        parameters: { name: 'Ann', age: int(42), score: 0.75 },
      },
    ]);
    expect(records).toEqual([{ p: { id: '4:db1:17', labels: ['Person'], properties: { name: 'Ann', age: 42 } } }]);
    expect(driver.events).toEqual(['session WRITE movies', 'close session']);
    await store.close();
    expect(driver.events.at(-1)).toBe('close driver');
  });

  it('ensurePropertyIndexes sends one CREATE INDEX ... IF NOT EXISTS per property or node key, and nothing on a read_only resource', async () => {
    const { driver, store } = open({ host: 'graph.example.com' });
    await store.ensurePropertyIndexes([
      { label: 'Sentence', property: 'id' },
      { label: 'Tag', property: 'id' },
      { label: 'Entity', properties: ['label', 'value'] },
    ]);
    expect(driver.sent.map(({ query, accessMode, via }) => ({ query, accessMode, via }))).toEqual([
      { query: 'CREATE INDEX `loom_Sentence.id` IF NOT EXISTS FOR (n:`Sentence`) ON (n.`id`)', accessMode: 'WRITE', via: 'auto-commit' },
      { query: 'CREATE INDEX `loom_Tag.id` IF NOT EXISTS FOR (n:`Tag`) ON (n.`id`)', accessMode: 'WRITE', via: 'auto-commit' },
      // a node key of several properties: one composite index, which a MERGE on all of them uses
      { query: 'CREATE INDEX `loom_Entity.label.value` IF NOT EXISTS FOR (n:`Entity`) ON (n.`label`, n.`value`)', accessMode: 'WRITE', via: 'auto-commit' },
    ]);
    const readOnly = open({ host: 'graph.example.com', read_only: true });
    await expect(readOnly.store.ensurePropertyIndexes([{ label: 'Tag', property: 'id' }])).rejects.toBeInstanceOf(GraphReadOnlyError);
    expect(readOnly.driver.sent).toEqual([]);
  });

  it('sends an UNWIND batch of 100 maps in one write transaction and commits it', async () => {
    const { driver, store } = open({ host: 'neo4j+s://cluster.example.com' });
    const batch = Array.from({ length: 100 }, (_, index) => ({ id: index, name: `item ${index}`, tags: ['a'] }));
    driver.answerWith((query) => (query.startsWith('MATCH') ? [new Neo4jRecord(['c'], [int(100)])] : []));

    const count = await store.writeTransaction(async (tx) => {
      await tx.run('UNWIND $batch AS row CREATE (:Item {id: row.id, name: row.name, tags: row.tags})', { batch });
      return (await tx.run('MATCH (i:Item) RETURN count(i) AS c'))[0]?.['c'];
    });

    expect(count).toBe(100);
    expect(driver.created[0]?.url).toBe('neo4j+s://cluster.example.com:7687');
    expect(driver.sent[0]).toEqual({
      via: 'transaction',
      database: undefined,
      accessMode: 'WRITE',
      query: 'UNWIND $batch AS row CREATE (:Item {id: row.id, name: row.name, tags: row.tags})',
      parameters: { batch: batch.map((row) => ({ ...row, id: int(row.id) })) },
    });
    expect(driver.events).toEqual(['session WRITE (home)', 'begin', 'commit', 'close session']);
  });

  it('a read_only resource refuses writes with nothing sent, and reads in READ access mode', async () => {
    const { driver, store } = open({ host: 'bolt://replica.example.com:7690', read_only: true, database: 'kg' });
    for (const query of [
      "CREATE (n:Person {name: 'Eve'})",
      'MATCH (n) DETACH DELETE n',
      "CALL apoc.create.node(['X'], {}) YIELD node RETURN node",
      "LOAD CSV FROM 'file:///x.csv' AS line RETURN line",
    ]) {
      await expect(store.run(query)).rejects.toBeInstanceOf(GraphReadOnlyError);
    }
    await expect(store.writeTransaction(() => Promise.resolve())).rejects.toBeInstanceOf(GraphReadOnlyError);
    const error = await store.run('MERGE (n:Tag {value: 1})').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ clause: 'MERGE', kind: 'failed-precondition', address: 'bolt://replica.example.com:7690 database kg' });
    expect(driver.sent).toEqual([]);
    expect(driver.events).toEqual([]);

    driver.answerWith(() => [new Neo4jRecord(['a', 'r', 'b'], [ann, knows, bob])]);
    const records = await store.run("MATCH (a:Person)-[r:KNOWS]->(b) WHERE a.note <> 'SET x' RETURN a, r, b");
    expect(driver.sent.map(({ accessMode, database }) => ({ accessMode, database }))).toEqual([{ accessMode: 'READ', database: 'kg' }]);
    expect(records).toEqual([
      {
        a: { id: '4:db1:17', labels: ['Person'], properties: { name: 'Ann', age: 42 } },
        r: { id: '5:db1:3', type: 'KNOWS', start: '4:db1:17', end: '4:db1:18', properties: { since: 2020, weight: 0.5 } },
        // an Integer beyond 2^53 comes back as text rather than a rounded number
        b: { id: '4:db1:18', labels: ['Person'], properties: { name: 'Bob', visits: '9007199254740993' } },
      },
    ]);
  });

  it('classifies a deadlock as transient and a syntax error as a query error, with the password redacted', async () => {
    const { driver, store } = open({ host: 'graph.example.com', password: 'hunter2-secret' });

    driver.answerWith(
      () => new Neo4jError('ForsetiClient[1] can not acquire lock: deadlock detected', 'Neo.TransientError.Transaction.DeadlockDetected', '50N42', 'deadlock'),
    );
    const deadlock = await store.run('MATCH (n:Item) SET n.seen = true').catch((caught: unknown) => caught);
    expect(deadlock).toBeInstanceOf(GraphTransientError);
    expect(deadlock).toMatchObject({ code: 'Neo.TransientError.Transaction.DeadlockDetected', store: 'neo4j', kind: 'unavailable' });
    expect(isTransientGraphError(deadlock)).toBe(true);

    driver.answerWith(() => new Neo4jError("Invalid input 'RETURN' (login hunter2-secret)", 'Neo.ClientError.Statement.SyntaxError', '42001', 'syntax'));
    const syntax = await store.run('MATCH (n RETURN n').catch((caught: unknown) => caught);
    expect(syntax).toBeInstanceOf(GraphQueryError);
    expect(syntax).toMatchObject({ code: 'Neo.ClientError.Statement.SyntaxError', kind: 'failed-precondition' });
    expect(isTransientGraphError(syntax)).toBe(false);
    expect((syntax as Error).message).toContain("Invalid input 'RETURN'");
    expect((syntax as Error).message).not.toContain('hunter2-secret');

    driver.answerWith(() => new Neo4jError('Failed to connect to server', 'ServiceUnavailable', '08000', 'unavailable'));
    const down = await store.run('RETURN 1 AS one').catch((caught: unknown) => caught);
    expect(down).toBeInstanceOf(GraphUnavailableError);
    expect(isTransientGraphError(down)).toBe(true);
  });

  it('rolls a write transaction back when a statement fails, and never commits it', async () => {
    const { driver, store } = open({ host: 'graph.example.com' });
    driver.answerWith((query) =>
      query.includes('Conflict')
        ? new Neo4jError('Node(1) already exists with label `Conflict`', 'Neo.ClientError.Schema.ConstraintValidationFailed', '22N41', 'constraint')
        : [],
    );
    const failing = store.writeTransaction(async (tx) => {
      await tx.run('CREATE (:Ok)');
      await tx.run('CREATE (:Conflict {id: 1})');
    });
    await expect(failing).rejects.toBeInstanceOf(GraphQueryError);
    expect(driver.events).toEqual(['session WRITE (home)', 'begin', 'rollback', 'close session']);
  });

  it('stream yields records one by one and an aborted signal stops it with its reason', async () => {
    const { driver, store } = open({ host: 'graph.example.com' });
    driver.answerWith(() => [1, 2, 3].map((value) => new Neo4jRecord(['n'], [int(value)])));
    const controller = new AbortController();
    const seen: unknown[] = [];
    const reason = new Error('enough');
    const reading = (async () => {
      for await (const record of store.stream('UNWIND [1, 2, 3] AS n RETURN n', {}, { signal: controller.signal })) {
        seen.push(record['n']);
        if (seen.length === 2) controller.abort(reason);
      }
    })();
    await expect(reading).rejects.toBe(reason);
    expect(seen).toEqual([1, 2]);
    expect(driver.events).toEqual(['session WRITE (home)', 'close session']);
  });
});
