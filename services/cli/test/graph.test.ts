import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RESOURCE_KINDS } from '@loom/domain';
import { startEmbeddedGraph } from '@loom/graph';
import { startNeo4j } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './loom-in-process.js';
import { loomMain } from './loom-process.js';
import { neo4jResourceFile } from './neo4j-workflow.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-cli-graph-'));
let server: Awaited<ReturnType<typeof startEmbeddedGraph>>;

beforeAll(async () => {
  server = await startEmbeddedGraph({ dataDir: join(dir, 'graph'), port: 0 });
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function resourceFile(parameters: Record<string, unknown> = {}): string {
  const file = join(dir, `resource-${Math.random().toString(16).slice(2)}.json`);
  const resource = {
    name: 'Graph_7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d',
    resource: { qualifiedName: RESOURCE_KINDS.AGE_DATABASE },
    parameters: { host: server.host, port: server.port, user: 'postgres', graph: 'cli_graph', ...parameters },
  };
  writeFileSync(file, JSON.stringify(resource));
  return file;
}

/** Creates a node through `loom graph query` with parameters, then reads it back as a table and as JSON. */
async function expectQueryRoundTrip(file: string): Promise<void> {
  const created = await runCli([
    'graph',
    'query',
    '--resource',
    file,
    '--param',
    'id=7',
    '--param',
    'name=widget',
    'CREATE (n:Part {id: $id, name: $name}) RETURN n.id AS id, n.name AS name',
  ]);
  expect(created.stderr).toBe('1 record\n');
  expect(created.stdout).toBe('ID  NAME\n7   widget\n');

  const json = await runCli(['--output', 'json', 'graph', 'query', '--resource', file, 'MATCH (n:Part) RETURN n']);
  expect(json.status).toBe(0);
  expect(JSON.parse(json.stdout)).toEqual([{ n: expect.objectContaining({ labels: ['Part'], properties: { id: 7, name: 'widget' } }) }]);
}

describe('loom graph query', () => {
  it('runs Cypher with parameters against a resource and prints the records as a table or JSON', async () => {
    await expectQueryRoundTrip(resourceFile());
  });

  it('reports a statement the graph refuses in one line, exit code 1', async () => {
    const refused = await runCli(['graph', 'query', '--resource', resourceFile(), 'MATCH (n RETURN n']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^loom: query failed on age 127\.0\.0\.1:\d+\/postgres graph cli_graph: syntax error at or near "RETURN"\n$/);
  });

  it('refuses writes through a read_only resource before sending them', async () => {
    const refused = await runCli(['graph', 'query', '--resource', resourceFile({ read_only: true }), 'CREATE (n:Part {id: 8})']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/read_only.*CREATE/);
  });

  it('asks for the password on standard input when the file holds a sealed one, and cannot reach `embedded`', async () => {
    const sealed = await runCli(['graph', 'query', '--resource', resourceFile({ password: '###AES-AAAA' }), 'RETURN 1 AS one']);
    expect(sealed.status).toBe(2);
    expect(sealed.stderr).toMatch(/--password-stdin/);
    const piped = await runCli(['graph', 'query', '--resource', resourceFile({ password: '###AES-AAAA' }), '--password-stdin', 'RETURN 1 AS one'], {
      input: 'any\n',
    });
    expect(piped.stdout).toBe('ONE\n1\n');

    const embedded = await runCli(['graph', 'query', '--resource', resourceFile({ host: 'embedded' }), 'RETURN 1 AS one']);
    expect(embedded.status).toBe(2);
    expect(embedded.stderr).toMatch(/loom serve/);
  });
});

/** A reader slower than the writer: 4 KiB a turn of the event loop, echoing what arrives once it has all arrived. */
const SLOW_READER = `
const chunks = [];
process.stdin.on('readable', function read() {
  const chunk = process.stdin.read(4096);
  if (chunk === null) return;
  chunks.push(chunk);
  setImmediate(read);
});
process.stdin.on('end', () => process.stdout.write(Buffer.concat(chunks)));
`;

/** A reader that takes what first arrives, echoes at most 100 bytes of it and goes away, as \`head -c 100\` does. */
const EARLY_LEAVER = `
process.stdin.once('readable', () => {
  process.stdout.write((process.stdin.read() ?? Buffer.alloc(0)).subarray(0, 100));
  process.exit(0);
});
`;

/**
 * Runs the `loom` binary (its own process: the pipe and the exit code are the point) with its standard output piped
 * into a reader (another process); answers loom's exit code and standard error and what the reader echoed.
 */
async function throughReader(reader: string, args: readonly string[]): Promise<{ status: number | null; stderr: string; received: string }> {
  const readerProcess = spawn(process.execPath, ['-e', reader], { stdio: ['pipe', 'pipe', 'inherit'] });
  const received: Buffer[] = [];
  readerProcess.stdout.on('data', (chunk: Buffer) => received.push(chunk));
  const readerClosed = new Promise((resolve) => readerProcess.on('close', resolve));
  const loom = spawn(process.execPath, ['--no-node-snapshot', loomMain, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH },
    stdio: ['ignore', readerProcess.stdin, 'pipe'],
  });
  // loom holds its own copy of the reader's input now: this process lets go of its end, so that the reader's input
  // ends when loom exits
  readerProcess.stdin.destroy();
  const stderr: Buffer[] = [];
  loom.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const [status] = await Promise.all([new Promise<number | null>((resolve) => loom.on('close', resolve)), readerClosed]);
  return { status, stderr: Buffer.concat(stderr).toString('utf8'), received: Buffer.concat(received).toString('utf8') };
}

/** A `loom graph query` of `rows` records of about 70 bytes of JSON each. */
const largeQuery = (rows: number, format: 'json' | 'text'): string[] => [
  '--output',
  format,
  'graph',
  'query',
  '--resource',
  resourceFile(),
  '--columns',
  'i,text',
  `UNWIND range(1, ${rows}) AS i RETURN i, 'abcdefghijklmnopqrstuvwxyz0123456789' AS text`,
];

describe('loom graph query into a pipe', () => {
  it('writes all of a large result before it exits, however slowly the pipe is read (issue 37)', async () => {
    const rows = 20_000;
    const { status, stderr, received } = await throughReader(SLOW_READER, largeQuery(rows, 'json'));
    expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
    // more than the pipe and socket buffers hold, so most of it is still queued when the command is done
    expect(received.length).toBeGreaterThan(1_000_000);
    const records = JSON.parse(received) as { i: number }[];
    expect(records).toHaveLength(rows);
    expect(records.at(-1)).toEqual({ i: rows, text: 'abcdefghijklmnopqrstuvwxyz0123456789' });
  });

  it('ends quietly with 141, as a closed pipe ends a Unix tool, when the reader goes away early', async () => {
    const { status, stderr, received } = await throughReader(EARLY_LEAVER, largeQuery(20_000, 'json'));
    // no stack trace of the failed write
    expect({ status, stderr }).toEqual({ status: 141, stderr: '' });
    // the beginning of the output, up to 100 bytes of it
    expect(received).toMatch(/^\[\n/);
  });
});

describe('loom graph query on Neo4j', () => {
  let neo4j: Awaited<ReturnType<typeof startNeo4j>>;
  beforeAll(async () => {
    neo4j = await startNeo4j();
    // a JVM starts in seconds, and much longer on a loaded machine
  }, 180_000);
  afterAll(async () => {
    await neo4j?.close();
  });

  it('runs Cypher with parameters against a Neo4j resource and prints the records as a table or JSON', async () => {
    await expectQueryRoundTrip(neo4jResourceFile(neo4j));
  });

  it('reports a statement Neo4j refuses in one line, exit code 1', async () => {
    const refused = await runCli(['graph', 'query', '--resource', neo4jResourceFile(neo4j), 'MATCH (n RETURN n']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^loom: query failed on neo4j bolt:\/\/127\.0\.0\.1:\d+: Invalid input[^\n]*\n$/);
  });
});
