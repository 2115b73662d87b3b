import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecutorClient } from '@loom/contracts';
import { openGraphStore } from '@loom/graph';
import { call, createClient } from '@loom/service-kit/client';
import { type Neo4jTestServer, startNeo4j } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';
import { workflowOnNeo4j } from './neo4j-workflow.js';

// ReadGraph and `loom graph query` without --sso, on one in-process loom: read-only Cypher as loom itself, for a
// person or a service identity whose role allows it (read-graph), on the embedded graph or a workflow's graph resource

const readerToken = 'reader-token-for-the-read-graph-test-01';
const strangerToken = 'stranger-token-for-the-read-graph-test';
const adminToken = 'admin-token-for-the-read-graph-test-0001';

const WORKFLOW = `name: People graph
resources:
  People:
    kind: graph.AgeDatabase
    parameters: { host: embedded, user: postgres, graph: people }
components:
  Names: source.Inlet
  Write people:
    kind: persistence.GraphDatabaseWriter
    resource: People
    options: { query: "CREATE (:Person {name: $name})" }
links:
  - Names -> Write people
`;

let loom: InProcessLoom;
let workflowFile: string;

const as = (token: string, ...args: string[]): ReturnType<typeof runCli> => runCli(['--address', loom.address, '--token', token, ...args]);

beforeAll(async () => {
  loom = await startLoom([
    '--set',
    `loom.auth.tokens.reporting-service=${readerToken}`,
    '--set',
    'loom.auth.roles.reporting-service=viewer',
    '--set',
    `loom.auth.tokens.stranger=${strangerToken}`,
    '--set',
    `loom.auth.tokens.ops-lead=${adminToken}`,
    '--set',
    'loom.auth.roles.ops-lead=admin',
    '--set',
    'loom.scripts.python.warmInterpreters=0',
  ]);
  workflowFile = join(loom.dataDirectory, 'people.workflow.yaml');
  writeFileSync(workflowFile, WORKFLOW);
});
afterAll(async () => {
  await loom?.stop();
});

describe('loom graph query through ReadGraph', () => {
  it('loom health shows where the embedded graph listens, before its first use and once it runs', async () => {
    const before = await as(readerToken, 'health');
    expect(before.stdout).toMatch(
      /graph: embedded graph on a port chosen at its first start \(not started yet: it starts at its first use\), data in .*graphdata/,
    );

    // a read of a graph that does not exist yet starts the embedded graph, and says what is missing
    const missing = await as(readerToken, 'graph', 'query', '--graph', 'people', 'MATCH (p:Person) RETURN p.name AS name');
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain("graph 'people' does not exist");

    const health = await as(readerToken, 'health', '--output', 'json');
    const graph = (JSON.parse(health.stdout) as { graph: { address: string; running: boolean; graphs: string[] } }).graph;
    expect(graph).toMatchObject({ address: expect.stringMatching(/^127\.0\.0\.1:\d+$/), running: true, graphs: [] });

    // the address is for psql and stores outside loom: the test writes the graph it reads through it
    const [host, port] = graph.address.split(':');
    const writer = openGraphStore({
      resource: { qualifiedName: 'loom.resources.graph.AgeDatabase' },
      parameters: { host, port: Number(port), user: 'postgres', graph: 'people' },
    });
    try {
      await writer.run("UNWIND [['Ada', 36], ['Grace', 45], ['Alan', 41], ['Edsger', 72]] AS p CREATE (:Person {name: p[0], age: p[1]})");
    } finally {
      await writer.close();
    }
    const after = await as(readerToken, 'health');
    expect(after.stdout).toContain(`graph: embedded graph at ${graph.address} (running, graphs: people)`);
  });

  it('answers rows with parameters, finding the embedded graph by itself, and says when --limit cut them', async () => {
    // no --graph: the embedded graph's only graph
    const listed = await as(readerToken, 'graph', 'query', 'MATCH (p:Person) WHERE p.age > $min RETURN p.name AS name ORDER BY name', '--param', 'min=40');
    expect(listed.stderr).toBe('3 records\n');
    expect(listed.stdout).toBe('NAME\nAlan\nEdsger\nGrace\n');

    const cut = await as(readerToken, 'graph', 'query', 'MATCH (p:Person) RETURN p.name AS name ORDER BY name', '--limit', '2');
    expect(cut.stdout).toBe('NAME\nAda\nAlan\n');
    expect(cut.stderr).toBe('2 records, truncated: the query has more (raise --limit, at most 10000)\n');

    // --params: numbers arrive as google.protobuf.Struct doubles; LIMIT takes the whole one as an integer
    const json = await as(
      readerToken,
      'graph',
      'query',
      '--graph',
      'people',
      'MATCH (p:Person) RETURN p.name AS name, p.age AS age ORDER BY p.age DESC LIMIT $n',
      '--params',
      '{"n": 1}',
      '--output',
      'json',
    );
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toEqual({ columns: ['name', 'age'], rows: [{ name: 'Edsger', age: 72 }], truncated: false, store: 'embedded' });
  });

  it('refuses a write with FAILED_PRECONDITION from the store, and writes nothing', async () => {
    const refused = await as(adminToken, 'graph', 'query', '--graph', 'people', "CREATE (:Person {name: 'Mallory'}) RETURN 1 AS one");
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('FAILED_PRECONDITION');
    expect(refused.stderr).toContain('is read_only: the store refused a write in a read-only transaction');
    const count = await as(readerToken, 'graph', 'query', 'MATCH (p:Person) RETURN count(p) AS people');
    expect(count.stdout).toBe('PEOPLE\n4\n');
  });

  it('ends a query that runs past --timeout with DEADLINE_EXCEEDED', async () => {
    const long = await as(readerToken, 'graph', 'query', '--timeout', '0.001', 'UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b RETURN count(*) AS c');
    expect(long.status).not.toBe(0);
    expect(long.stderr).toContain('DEADLINE_EXCEEDED');
    expect(long.stderr).toContain('ran past its time limit');
  });

  it('refuses an identity without a role that allows it, with PERMISSION_DENIED', async () => {
    const client = createClient(ExecutorClient, loom.address, { token: strangerToken, retry: false });
    try {
      const request = { query: 'RETURN 1 AS one', parameters: {}, graph: 'people', workflow: '', resource: '', maxRows: 0, timeout: undefined, columns: [] };
      await expect(call(client, 'readGraph', request)).rejects.toMatchObject({ code: 7 }); // PERMISSION_DENIED
    } finally {
      client.close();
    }
    const cli = await as(strangerToken, 'graph', 'query', '--graph', 'people', 'RETURN 1 AS one');
    expect(cli.stderr).toContain('PERMISSION_DENIED');
    // audited as every refused call is, once the refusal is answered (refusal-audit.ts): the tail is asked until it shows
    await expect.poll(async () => (await as(adminToken, 'audit', 'tail', '--type', 'PERMISSION_DENIED')).stdout).toContain('actor="stranger"');
    const tail = await as(adminToken, 'audit', 'tail', '--type', 'PERMISSION_DENIED');
    expect(tail.stdout).toContain('actor="stranger"');
    expect(tail.stdout).toContain('/loom.v1.Executor/ReadGraph');
  });

  it('names the wrong field of a request: max_rows past 10,000, graph beside workflow; an unknown workflow is NOT_FOUND', async () => {
    const client = createClient(ExecutorClient, loom.address, { token: readerToken, retry: false });
    const request = { query: 'RETURN 1 AS one', parameters: {}, graph: 'people', workflow: '', resource: '', maxRows: 0, timeout: undefined, columns: [] };
    try {
      await expect(call(client, 'readGraph', { ...request, maxRows: 10_001 })).rejects.toMatchObject({ code: 3, details: expect.stringContaining('max_rows') });
      await expect(call(client, 'readGraph', { ...request, workflow: 'People graph' })).rejects.toMatchObject({
        code: 3,
        details: expect.stringContaining('graph'),
      });
      await expect(call(client, 'readGraph', { ...request, graph: '', workflow: 'Nowhere' })).rejects.toMatchObject({ code: 5 }); // NOT_FOUND
    } finally {
      client.close();
    }
  });

  it("reads a stored workflow's graph resource by the workflow's name", async () => {
    expect((await as(adminToken, 'workflow', 'push', workflowFile)).status).toBe(0);
    const read = await as(readerToken, 'graph', 'query', '--workflow', 'People graph', 'MATCH (p:Person) RETURN count(p) AS people');
    expect(read.stderr).toBe('1 record\n');
    expect(read.stdout).toBe('PEOPLE\n4\n');
    const named = await as(readerToken, 'graph', 'query', '--workflow', 'People graph', '--resource-name', 'Nobody', 'RETURN 1 AS one');
    expect(named.stderr).toContain('NOT_FOUND');
  });
});

describe('ReadGraph on Neo4j', () => {
  let neo4j: Neo4jTestServer;
  beforeAll(async () => {
    neo4j = await startNeo4j();
  }, 180_000);
  afterAll(async () => {
    await neo4j?.close();
  });

  it("reads a workflow's Neo4j resource, its sealed password opened by the executor, and the session's READ mode refuses a write", async () => {
    const onNeo4j = workflowOnNeo4j(workflowFile, neo4j, 'People on Neo4j_2f3a4b5c-6d7e-4f8a-9b0c-1d2e3f4a5b6c');
    expect((await as(adminToken, 'workflow', 'push', onNeo4j)).status).toBe(0);
    const read = await as(
      readerToken,
      'graph',
      'query',
      '--workflow',
      'People on Neo4j',
      'RETURN $greeting AS greeting',
      '--param',
      'greeting="hello"',
      '--output',
      'json',
    );
    expect(read.stderr).toBe('');
    expect(JSON.parse(read.stdout)).toEqual({ columns: ['greeting'], rows: [{ greeting: 'hello' }], truncated: false, store: 'neo4j' });

    const refused = await as(readerToken, 'graph', 'query', '--workflow', 'People on Neo4j', "CREATE (:ReadGraphProbe {name: 'Mallory'})");
    expect(refused.stderr).toContain('FAILED_PRECONDITION');
    expect(refused.stderr).toContain('the store refused a write in read access mode');
    const none = await as(readerToken, 'graph', 'query', '--workflow', 'People on Neo4j', 'MATCH (n:ReadGraphProbe) RETURN count(n) AS probes');
    expect(none.stdout).toBe('PROBES\n0\n');
  });
});
