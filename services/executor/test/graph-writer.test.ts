import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS, findResourceDefinition, RESOURCE_KINDS, type ResourceInstance } from '@loom/domain';
import { type GraphStore } from '@loom/graph';
import { FaultProxy, RecordingDriver } from '@loom/graph/testing';
import { int, Neo4jError } from 'neo4j-driver';
import { createLogger } from '@loom/telemetry';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GraphStores } from '../src/components/graph-stores.js';
import { componentFactories } from '../src/components/registry.js';
import { WorkflowRun } from '../src/runtime/workflow-run.js';
import { GRAPH_BACKENDS, type GraphBackend, type GraphBackendName, startGraphBackend } from './graph-backends.js';
import { captureSink, instance, workflowOf } from './workflows.js';

const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) });
const root = mkdtempSync(join(tmpdir(), 'loom-graph-writer-'));
const config = loadConfig({ env: {}, overrides: [`loom.embedded.graph.dataDir=${join(root, 'embedded')}`] });

const stores = new GraphStores(config, logger);
const runs: WorkflowRun[] = [];

afterEach(async () => {
  for (const run of runs.splice(0)) await run.stop(5_000);
});

afterAll(async () => {
  await stores.close();
  rmSync(root, { recursive: true, force: true });
});

const INLET = 'Items_0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const WRITER = 'Write items_1b2c3d4e-5f6a-4b7c-9d8e-0f1a2b3c4d5e';
const SINK = 'Sink_2c3d4e5f-6a7b-4c8d-8e9f-1a2b3c4d5e6f';
const FAILED = 'Failures_3d4e5f6a-7b8c-4d9e-9f0a-2b3c4d5e6f7a';
const GRAPH_NAME = 'Graph_4e5f6a7b-8c9d-4e0f-8a1b-3c4d5e6f7a8b';

/** What each server says of a division by zero (a statement it refuses, not a transient failure). */
const DIVISION_BY_ZERO: Record<GraphBackendName, RegExp> = { AGE: /division by zero/, Neo4j: /\/ by zero/ };

interface WriterSetup {
  readonly query: string;
  readonly resource: ResourceInstance;
  readonly options?: Record<string, unknown>;
  /** The stored workflow version the run runs (what `provenance` writes as loom_workflow_version). */
  readonly workflowVersion?: number;
}

/** inlet → graph writer → sink, with a failure handler that records what fails. */
async function startWriter({ query, options = {}, resource: graphResource, workflowVersion }: WriterSetup) {
  const sink = captureSink();
  const failures = captureSink();
  const factories = new Map(componentFactories(config, { graphStores: stores }));
  const writer = { ...instance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, WRITER, { query, failure_handler: FAILED, ...options }), resource: graphResource };
  const workflow = workflowOf(
    'graph writer test',
    [instance(COMPONENT_KINDS.INLET, INLET), writer, instance(COMPONENT_KINDS.LOGGER, SINK), instance(COMPONENT_KINDS.MESSAGE_FILTER, FAILED)],
    [
      [INLET, WRITER],
      [WRITER, SINK],
    ],
  );
  factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
  factories.set(COMPONENT_KINDS.MESSAGE_FILTER, failures.factory);
  const run = await WorkflowRun.start(workflow, { factories, logger, ...(workflowVersion === undefined ? {} : { workflowVersion }) });
  runs.push(run);
  const publish = (body: Record<string, unknown>, id = `m-${String(body.id)}`) => run.publish(INLET, { id, body, headers: {} }, new AbortController());
  return { run, publish, sink: sink.received, failures: failures.received };
}

const writerOf = (run: WorkflowRun) => run.counters().find((counters) => counters.name === WRITER);

// each test writes nodes of its own label, so none needs the graph cleared
describe.each(GRAPH_BACKENDS)('graph database writer and reader on %s', (backendName) => {
  let backend: GraphBackend;
  let graph: GraphStore;
  const resource = (parameters: Record<string, unknown> = {}) => backend.resource('writer_test', { name: GRAPH_NAME, parameters });
  const count = async (label: string): Promise<number> => {
    const [row] = await graph.run(`MATCH (n:${label}) RETURN count(n) AS total`);
    return Number(row?.total);
  };

  beforeAll(async () => {
    backend = await startGraphBackend(backendName, root);
    graph = backend.store('writer_test');
    // a server starts in seconds, and much longer on a loaded machine
  }, 180_000);

  afterAll(async () => {
    await backend?.close();
  });

  it('writes 1,000 nodes in batches of 20, and a re-run with MERGE changes nothing', async () => {
    const query = 'MERGE (n:Article {id: $id}) SET n.title = $title';
    for (let pass = 0; pass < 2; pass++) {
      const { run, publish, sink } = await startWriter({
        query,
        resource: resource(),
        options: { batch_writes: true, batch_size: 20, aggregation_timeout: 50 },
      });
      for (let id = 0; id < 1000; id += 100)
        await Promise.all(Array.from({ length: 100 }, (_, offset) => publish({ id: id + offset, title: `article ${id + offset}` })));
      await expect.poll(() => sink.length, { timeout: 30_000 }).toBe(1000);
      expect(writerOf(run)).toMatchObject({ messagesIn: 1000, messagesOut: 1000, messagesFailed: 0 });
      await run.stop(5_000);
      expect(await count('Article')).toBe(1000);
    }
    // toString shows a whole number stored as an integer: a float would read "999.0"
    const [sample] = await graph.run('MATCH (n:Article) WHERE n.id = 999 RETURN n.title AS title, toString(n.id) AS id');
    expect(sample).toEqual({ title: 'article 999', id: '999' });
  });

  it('writes relationships between merged nodes once with their properties (null left out), and a re-delivered batch adds none', async () => {
    // the text-to-graph example's shape: on AGE the trailing CREATE is written as rows of the type's table
    const query =
      'MERGE (d:Memo {id: $id}) WITH d, $topics AS topics UNWIND topics AS topic MERGE (t:Topic {value: topic.value}) ' +
      'WITH DISTINCT d, t, topic WHERE NOT exists((d)-[:ABOUT]->(t)) CREATE (d)-[:ABOUT {weight: topic.weight}]->(t)';
    const topics = (id: number) => [0, 1, 2].map((offset) => ({ value: `topic ${(id + offset) % 4}`, weight: offset === 2 ? null : offset + 1 }));
    for (let pass = 0; pass < 2; pass++) {
      const { run, publish, sink } = await startWriter({
        query,
        resource: resource(),
        options: { batch_writes: true, batch_size: 10, aggregation_timeout: 50 },
      });
      await Promise.all(Array.from({ length: 10 }, (_, id) => publish({ id, topics: topics(id) })));
      await expect.poll(() => sink.length, { timeout: 30_000 }).toBe(10);
      await run.stop(5_000);
    }
    const [row] = await graph.run('MATCH (:Memo)-[r:ABOUT]->(:Topic) RETURN count(r) AS relationships, count(r.weight) AS weighted, sum(r.weight) AS total');
    expect(row).toEqual({ relationships: 30, weighted: 20, total: 30 });
    expect(await count('Topic')).toBe(4);
  });

  it('provenance: every node a statement writes carries its source message id, source, workflow, version and time, one by one and batched', async () => {
    // both nodes marked after their MERGE; the CREATE of the relationship binds them again and marks nothing more
    const query = 'MERGE (p:Lineage {id: $id}) SET p.name = $name MERGE (c:LineageCity {name: $city}) CREATE (p)-[:LIVES_IN]->(c)';
    const before = Date.now();
    for (const [batched, ids] of [
      [false, [1, 2]],
      [true, [3, 4, 5]],
    ] as const) {
      const { run, publish, sink } = await startWriter({
        query,
        resource: resource(),
        workflowVersion: 7,
        options: { provenance: true, ...(batched ? { batch_writes: true, batch_size: 3, aggregation_timeout: 50 } : {}) },
      });
      await Promise.all(ids.map((id) => publish({ id, name: `lineage ${id}`, city: `lineage ${id}` }, `source-${id}`)));
      await expect.poll(() => sink.length, { timeout: 30_000 }).toBe(ids.length);
      await run.stop(5_000);
    }
    const rows = await graph.run(
      'MATCH (p:Lineage), (c:LineageCity) WHERE c.name = p.name RETURN p.id AS id, p.loom_message_id AS message, p.loom_source AS source, ' +
        'p.loom_workflow AS workflow, p.loom_workflow_version AS version, p.loom_written_at AS writtenAt, c.loom_message_id AS cityMessage ORDER BY p.id',
    );
    expect(rows.map(({ writtenAt: _, ...row }) => ({ ...row, id: Number(row.id), version: Number(row.version) }))).toStrictEqual(
      [1, 2, 3, 4, 5].map((id) => ({ id, message: `source-${id}`, source: 'Items', workflow: 'graph writer test', version: 7, cityMessage: `source-${id}` })),
    );
    for (const { writtenAt } of rows) expect(Date.parse(writtenAt as string)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('provenance: a statement whose writes it cannot reach is refused at start, naming the query', async () => {
    await expect(startWriter({ query: 'FOREACH (x IN $xs | CREATE (:Lineage {v: x}))', resource: resource(), options: { provenance: true } })).rejects.toThrow(
      /options\.query: cannot be given provenance: the CREATE at character 21 is inside FOREACH/,
    );
  });

  it('flushes a partial batch once aggregation_timeout (ms) has passed', async () => {
    const { publish, sink } = await startWriter({
      query: 'CREATE (n:Partial {id: $id})',
      resource: resource(),
      options: { batch_writes: true, batch_size: 20, aggregation_timeout: 300 },
    });
    const started = performance.now();
    await Promise.all([1, 2, 3].map((id) => publish({ id })));
    await expect.poll(() => sink.length, { timeout: 5_000 }).toBe(3);
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect(await count('Partial')).toBe(3);
  });

  it('splits a batch with a poison message: 19 written, 1 in the failure handler with its error', async () => {
    const { publish, sink, failures } = await startWriter({
      query: 'CREATE (n:Ratio {id: $id, value: 100 / $divisor})',
      resource: resource(),
      options: { batch_writes: true, batch_size: 20, aggregation_timeout: 1_000 },
    });
    await Promise.all(Array.from({ length: 20 }, (_, id) => publish({ id, divisor: id === 13 ? 0 : 2 })));
    await expect.poll(() => sink.length + failures.length, { timeout: 10_000 }).toBe(20);
    expect(sink).toHaveLength(19);
    expect(failures).toHaveLength(1);
    expect(failures[0]?.body).toMatchObject({ failedComponent: WRITER, messageId: 'm-13', message: { body: { id: 13, divisor: 0 } } });
    expect(String(failures[0]?.body.error)).toMatch(DIVISION_BY_ZERO[backendName]);
    expect(await count('Ratio')).toBe(19);
  });

  it('retries a transient failure (connections reset by a proxy) within max_retry and writes the message', async () => {
    const proxy = await FaultProxy.start({ host: backend.host, port: backend.port });
    try {
      const { run, publish, sink, failures } = await startWriter({
        query: 'CREATE (n:Retried {id: $id})',
        options: { max_retry: 3, delay: 20 },
        resource: resource({ host: proxy.host, port: proxy.port }),
      });
      proxy.resetNext(2);
      await publish({ id: 1 });
      await expect.poll(() => sink.length, { timeout: 10_000 }).toBe(1);
      expect(failures).toHaveLength(0);
      expect(proxy.resets).toBe(2);
      expect(writerOf(run)?.messagesRetried).toBe(2);
      expect(await count('Retried')).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('refuses writes through a read_only resource before sending them', async () => {
    const { publish, failures } = await startWriter({ query: 'CREATE (n:Forbidden {id: $id})', resource: resource({ read_only: true }) });
    await publish({ id: 1 });
    await expect.poll(() => failures.length, { timeout: 5_000 }).toBe(1);
    expect(String(failures[0]?.body.error)).toMatch(/read_only.*CREATE/);
    expect(await count('Forbidden')).toBe(0);
  });

  it('adds the records to the message, or with stream_records emits them as messages', async () => {
    const query = 'CREATE (n:Streamed {id: $id}) RETURN n.id AS id, "made" AS what';
    const added = await startWriter({ query, resource: resource() });
    await added.publish({ id: 7 });
    await expect.poll(() => added.sink.length, { timeout: 5_000 }).toBe(1);
    expect(added.sink[0]?.body).toEqual({ id: 7, records: [{ id: 7, what: 'made' }] });

    const streamed = await startWriter({ query, resource: resource(), options: { stream_records: true } });
    await streamed.publish({ id: 8 });
    await expect.poll(() => streamed.sink.length, { timeout: 5_000 }).toBe(1);
    expect(streamed.sink[0]?.body).toEqual({ id: 8, what: 'made' });
  });

  it('graph reader: polls its query every period and emits each record as a message', async () => {
    await graph.run('CREATE (:Polled {id: 1}), (:Polled {id: 2})');
    const sink = captureSink();
    const factories = new Map(componentFactories(config, { graphStores: stores }));
    factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
    const reader = {
      ...instance(COMPONENT_KINDS.GRAPH_READER, INLET, { query: 'MATCH (n:Polled) RETURN n.id AS id ORDER BY n.id', period: 100 }),
      resource: resource(),
    };
    const run = await WorkflowRun.start(workflowOf('graph reader test', [reader, instance(COMPONENT_KINDS.LOGGER, SINK)], [[INLET, SINK]]), {
      factories,
      logger,
    });
    runs.push(run);
    await expect.poll(() => sink.received.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(4);
    expect(sink.received.slice(0, 4).map((message) => message.body)).toEqual([{ id: 1 }, { id: 2 }, { id: 1 }, { id: 2 }]);
  });
});

describe('graph database writer on the executor own embedded graph', () => {
  it('serves an AGE resource whose host is `embedded` from the executor own embedded graph', async () => {
    const definition = findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE)!;
    const embedded: ResourceInstance = { name: GRAPH_NAME, resource: definition, parameters: { host: 'embedded', user: 'postgres', graph: 'embedded_test' } };
    const { publish, sink } = await startWriter({ query: 'CREATE (n:Local {id: $id})', resource: embedded });
    await publish({ id: 1 });
    await expect.poll(() => sink.length, { timeout: 10_000 }).toBe(1);
    const store = await stores.open(embedded);
    try {
      const [row] = await store.run('MATCH (n:Local) RETURN count(n) AS total');
      expect(Number(row?.total)).toBe(1);
    } finally {
      await store.close();
    }
  });
});

// A real server reports a deadlock only to one of two transactions that race for the same locks, which no test can
// set up without depending on timing: the retry of a Neo4j transient error is checked at the driver boundary.
describe('graph database writer on Neo4j, checked at the driver boundary', () => {
  it('indexes the MERGE key, sends the batch as UNWIND $batch AS row with the message bodies, and the same statement again on a transient error (deadlock)', async () => {
    const driver = new RecordingDriver();
    let calls = 0;
    driver.answerWith((query) =>
      query.startsWith('UNWIND') && ++calls === 1
        ? new Neo4jError('deadlock detected', 'Neo.TransientError.Transaction.DeadlockDetected', '50N42', 'deadlock')
        : [],
    );
    const neo4jStores = new GraphStores(config, logger, { neo4jDriverFactory: driver.factory });
    const definition = findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE);
    const neo4j: ResourceInstance = {
      name: 'Neo4j_5f6a7b8c-9d0e-4f1a-8b2c-4d5e6f7a8b9c',
      resource: definition!,
      parameters: { host: 'neo4j://graph.internal', user: 'loom', password: 'pw-1', database: 'articles' },
    };
    const sink = captureSink();
    const factories = new Map(componentFactories(config, { graphStores: neo4jStores }));
    factories.set(COMPONENT_KINDS.LOGGER, sink.factory);
    const writer = {
      ...instance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, WRITER, {
        query: 'MERGE (n:Article {id: $id}) SET n.title = $title',
        batch_writes: true,
        batch_size: 3,
        aggregation_timeout: 1_000,
        max_retry: 2,
        delay: 10,
      }),
      resource: neo4j,
    };
    const run = await WorkflowRun.start(
      workflowOf(
        'neo4j writer test',
        [instance(COMPONENT_KINDS.INLET, INLET), writer, instance(COMPONENT_KINDS.LOGGER, SINK)],
        [
          [INLET, WRITER],
          [WRITER, SINK],
        ],
      ),
      { factories, logger },
    );
    runs.push(run);
    await Promise.all([1, 2, 3].map((id) => run.publish(INLET, { id: `m${id}`, body: { id, title: `t${id}` }, headers: {} }, new AbortController())));
    await expect.poll(() => sink.received.length, { timeout: 5_000 }).toBe(3);

    const statement = {
      database: 'articles',
      accessMode: 'WRITE',
      query: 'UNWIND $batch AS row MERGE (n:Article {id: row.id}) SET n.title = row.title',
      parameters: {
        // whole numbers go as Neo4j integers, not floats
        batch: [
          { id: int(1), title: 't1' },
          { id: int(2), title: 't2' },
          { id: int(3), title: 't3' },
        ],
      },
    };
    // first the index its MERGE looks nodes up by, once
    const index = { accessMode: 'WRITE', query: 'CREATE INDEX `loom_Article.id` IF NOT EXISTS FOR (n:`Article`) ON (n.`id`)' };
    expect(driver.sent).toEqual([expect.objectContaining(index), expect.objectContaining(statement), expect.objectContaining(statement)]);
    expect(run.counters().find((counters) => counters.name === WRITER)).toMatchObject({ messagesRetried: 3, messagesFailed: 0 });
    await run.stop(5_000);
    await neo4jStores.close();
  });
});
