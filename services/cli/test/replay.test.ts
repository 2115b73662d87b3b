import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { streamName } from '@loom/messaging';
import { EXECUTOR_STACK_ARGUMENTS, natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { connect, type JetStreamManager, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

/**
 * Issue 50, replay after a fix: a workflow on NATS JetStream keeps its processed messages
 * (loom.messaging.stream.keepProcessedMs), its script is fixed by a new push, and `loom workflow replay` sends the
 * kept messages through the fixed version; the graph writer MERGEs, so the nodes are rewritten, not doubled.
 */
const binary = natsServerBinary('loom workflow replay (services/cli/test/replay.test.ts)');

const WORKFLOW = 'Replayed docs';
const compact = (status: string): string => `name: ${WORKFLOW}
resources:
  Docs:
    kind: graph.AgeDatabase
    parameters: { host: embedded, user: postgres, graph: replayed }
components:
  Docs in: source.Inlet
  Classify:
    kind: processor.MessageTransformer
    options:
      script: "return { ...body, status: '${status}' };"
      language: javascript
  Write docs:
    kind: persistence.GraphDatabaseWriter
    resource: Docs
    options: { query: "MERGE (d:Doc {id: $id}) SET d.status = $status, d.writes = coalesce(d.writes, 0) + 1" }
links:
  - Docs in -> Classify -> Write docs
`;
const DOCUMENTS = 20;
/** The kept stream's messages for them: published in one call, they are stored as one batch envelope (issue 51). */
const KEPT = 1;

describe.skipIf(binary === undefined)('loom workflow replay (durable mode)', () => {
  let nats: NatsTestServer;
  let loom: InProcessLoom;
  let connection: NatsConnection;
  let manager: JetStreamManager;
  let file: string;
  const cli = (...args: string[]) => runCli(['--address', loom.address, ...args]);

  /** Each Doc node's status and how often it was written, by id. */
  async function graph(): Promise<Record<string, { status: string; writes: number }>> {
    const read = await cli(
      'graph',
      'query',
      '--graph',
      'replayed',
      'MATCH (d:Doc) RETURN d.id AS id, d.status AS status, d.writes AS writes',
      '--output',
      'json',
    );
    if (read.status !== 0) return {};
    const { rows } = JSON.parse(read.stdout) as { rows: { id: string; status: string; writes: number }[] };
    return Object.fromEntries(rows.map(({ id, status, writes }) => [id, { status, writes }]));
  }
  const statuses = async () => Object.values(await graph()).map(({ status, writes }) => `${status}/${writes}`);

  beforeAll(async () => {
    nats = await startNatsServer({ binary: binary! });
    loom = await startLoom([
      ...EXECUTOR_STACK_ARGUMENTS,
      '--set',
      `loom.messaging.nats.servers=${nats.url}`,
      '--set',
      'loom.messaging.stream.keepProcessedMs=3600000',
      // the second replay below is answered duplicate however slow the machine
      '--set',
      'loom.messaging.stream.duplicateWindowMs=600000',
    ]);
    connection = await connect({ servers: nats.url });
    manager = await connection.jetstreamManager();
    file = join(loom.dataDirectory, 'docs.workflow.yaml');
  });
  afterAll(async () => {
    await connection?.close();
    await loom?.stop();
    await nats?.close();
  });

  it('replays a processed batch through the fixed version, says how many it sent, and rewrites each node once', async () => {
    writeFileSync(file, compact('broken'));
    expect((await cli('workflow', 'push', file)).status).toBe(0);
    expect((await cli('workflow', 'start', WORKFLOW)).stderr).toBe('');
    const lines = Array.from({ length: DOCUMENTS }, (_, n) => JSON.stringify({ id: `doc-${n}`, title: `document ${n}` })).join('\n');
    writeFileSync(join(loom.dataDirectory, 'docs.jsonl'), `${lines}\n`);
    const published = await cli('message', 'publish', WORKFLOW, '--inlet', 'Docs in', '--file', join(loom.dataDirectory, 'docs.jsonl'));
    expect(published.status).toBe(0);
    await expect.poll(statuses, { timeout: 30_000 }).toEqual(Array(DOCUMENTS).fill('broken/1'));

    // the fix: a new version of the script, pushed, and the run restarted on it
    writeFileSync(file, compact('fixed'));
    expect((await cli('workflow', 'push', file)).status).toBe(0);
    expect((await cli('workflow', 'stop', WORKFLOW)).status).toBe(0);
    expect((await cli('workflow', 'start', WORKFLOW)).stderr).toBe('');

    const replayed = await cli('workflow', 'replay', WORKFLOW, '--since', '1h');
    expect(replayed.stderr).toBe('');
    expect(replayed.stdout).toBe(`replayed ${DOCUMENTS} messages into '${WORKFLOW}' (kept sequences 1 to ${KEPT})\n`);
    // MERGE: the same 20 nodes, each written again by the fixed version
    await expect.poll(statuses, { timeout: 30_000 }).toEqual(Array(DOCUMENTS).fill('fixed/2'));

    // the same replay again within the duplicate window sends nothing twice (the replays were not kept again)
    const again = await cli('workflow', 'replay', WORKFLOW, '--from-sequence', '1', '--output', 'json');
    expect(JSON.parse(again.stdout)).toEqual({
      workflow: WORKFLOW,
      replayed: 0,
      firstSequence: 1,
      lastSequence: KEPT,
      skipped: 0,
      duplicates: DOCUMENTS,
    });
    // audited (written after the answer): each replay with its counts
    const replays = async () =>
      (await cli('audit', 'tail', '--type', 'MESSAGES_REPLAYED', '--output', 'json')).stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => (JSON.parse(line) as { attributes: Record<string, string> }).attributes);
    await expect.poll(async () => (await replays()).length).toBe(2);
    expect(await replays()).toEqual([
      { sinceMs: '3600000', replayed: '20', skipped: '0', duplicates: '0', firstSequence: '1', lastSequence: String(KEPT) },
      { fromSequence: '1', replayed: '0', skipped: '0', duplicates: '20', firstSequence: '1', lastSequence: String(KEPT) },
    ]);
  });

  it('refuses a replay past the retention, past the last kept, without a start, and of a stopped workflow, in one line, changing nothing', async () => {
    const [stored] = JSON.parse((await cli('workflow', 'list', '--output', 'json')).stdout) as { name: string }[];
    const before = (await manager.streams.info(streamName(stored!.name))).state.last_seq;
    const refusals: [string[], RegExp][] = [
      [
        ['--since', '2h'],
        /: 7200000 ms reaches past what is kept: processed messages are kept 3600000 ms \(loom\.messaging\.stream\.keepProcessedMs\); nothing was replayed$/,
      ],
      [['--from-sequence', '999'], new RegExp(`: kept sequence 999 is past the last kept \\(${KEPT}\\); nothing was replayed$`)],
      [[], /give --since or --from-sequence, exactly one/],
      [['--since', '2x'], /expected a duration such as 90s, 30m, 2h or 1d/],
    ];
    for (const [options, reason] of refusals) {
      const refused = await cli('workflow', 'replay', WORKFLOW, ...options);
      expect(refused.status, options.join(' ')).not.toBe(0);
      expect(refused.stderr.trimEnd().split('\n'), options.join(' ')).toHaveLength(1);
      expect(refused.stderr.trimEnd()).toMatch(reason);
    }
    expect((await cli('workflow', 'stop', WORKFLOW)).status).toBe(0);
    const stopped = await cli('workflow', 'replay', WORKFLOW, '--since', '1h');
    expect(stopped.status).not.toBe(0);
    expect(stopped.stderr.trimEnd()).toMatch(/workflow 'Replayed docs.*' is stopped here: start it \(loom workflow start .*\) before a replay$/);
    expect((await manager.streams.info(streamName(stored!.name))).state.last_seq).toBe(before);
  });
});
