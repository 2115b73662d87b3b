import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { derivedInstanceName } from '@loom/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, type InProcessLoom, runCli, startLoom } from './loom-in-process.js';
import { EXECUTOR_STACK_ARGUMENTS } from '@loom/testing';

const example = fileURLToPath(new URL('../../../examples/article-pipeline.workflow.yaml', import.meta.url));
// the compact example names its workflow and components plainly: the store gives the workflow a uuid, the components
// get the uuids derived from their names
const NAME = 'Article pipeline';
const INLET = derivedInstanceName(NAME, 'component', 'Articles');
const FILTER = derivedInstanceName(NAME, 'component', 'Long enough');
const SINK = derivedInstanceName(NAME, 'component', 'Log');

let loom: InProcessLoom;
beforeAll(async () => {
  loom = await startLoom([...EXECUTOR_STACK_ARGUMENTS]);
});
afterAll(async () => {
  await loom.stop();
});

const loomAt = (...args: string[]): Promise<CliResult> => runCli(['--address', loom.address, ...args]);

interface StatusJson {
  state: string;
  components: { name: string; messagesIn: number; messagesOut: number }[];
}

describe('loom component, workflow start|status|dry-run|stop and message publish', () => {
  it('lists the catalog as a table and, with --output json, as the specification writes definitions', async () => {
    const table = await loomAt('component', 'list');
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/loom\.components\.processor\.MessageTransformer\s+Message Transformer\s+AVAILABLE\s+yes/);
    const json = JSON.parse((await loomAt('component', 'list', '--output', 'json')).stdout) as {
      qualifiedName: string;
      options: { name: string; group: string }[];
    }[];
    const writer = json.find((definition) => definition.qualifiedName === 'loom.components.persistence.GraphDatabaseWriter');
    expect(writer?.options.map((option) => option.name).slice(0, 9)).toEqual([
      'stream_records',
      'batch_writes',
      'batch_size',
      'aggregation_timeout',
      'max_retry',
      'delay',
      'store_error_content',
      'store_message_content',
      'failure_handler',
    ]);
  });

  it('runs the example: start, publish, status, dry-run, stop', async () => {
    expect((await loomAt('workflow', 'push', example)).status).toBe(0);
    const started = await loomAt('workflow', 'start', 'Article pipeline');
    expect(started.stderr).toBe('');
    expect(started.stdout).toMatch(/Article pipeline\s+[0-9a-f-]{36}\s+RUNNING\s+yes\n$/);
    expect((await loomAt('workflow', 'start', 'Article pipeline')).stdout).toMatch(/Article pipeline\s+[0-9a-f-]{36}\s+RUNNING\s+no, already running\n$/);

    const published = await loomAt(
      'message',
      'publish',
      'Article pipeline',
      '--inlet',
      INLET,
      '--body',
      '{"title":"graphs","text":"a long enough article about graphs"}',
      '--id',
      'cli-1',
    );
    expect(published.stdout).toMatch(/cli-1/);
    const short = await loomAt('message', 'publish', 'Article pipeline', '--inlet', INLET, '--body', '{"title":"x","text":"too short"}');
    expect(short.status).toBe(0);

    await expect
      .poll(
        async () =>
          (JSON.parse((await loomAt('workflow', 'status', 'Article pipeline', '--output', 'json')).stdout) as StatusJson).components.find(
            (c) => c.name === SINK,
          )?.messagesIn,
        {
          timeout: 10_000,
        },
      )
      .toBe(1);
    const status = JSON.parse((await loomAt('workflow', 'status', 'Article pipeline', '--output', 'json')).stdout) as StatusJson;
    expect(status.state).toBe('RUNNING');
    expect(status.components.find((component) => component.name === INLET)?.messagesOut).toBe(2);
    const table = (await loomAt('workflow', 'status', 'Article pipeline')).stdout;
    expect(table).toMatch(new RegExp(`^${NAME}_[0-9a-f-]{36}\\s+RUNNING`));
    expect(table).toMatch(/COMPONENT\s+IN\s+OUT\s+FAILED\s+RETRIED\s+QUEUED\s+LAST ?ERROR/i);

    // the running workflow drawn with its counters; the file drawn as DOT (issue 36)
    const picture = await loomAt('workflow', 'show', 'Article pipeline', '--status');
    expect(picture.stderr).toBe('');
    expect(picture.stdout).toMatch(/^flowchart LR\n {2}c0\(\["Articles<br\/>Inlet<br\/>in \d+ · out 2 · failed 0"\]\)$/m);
    expect(picture.stdout).toMatch(/ {2}c3\[\["Log<br\/>Logger<br\/>in 1 · out \d+ · failed 0"\]\]/);
    const drawn = await loomAt('workflow', 'show', example, '--format', 'dot');
    expect(drawn.stdout).toMatch(/^digraph "Article pipeline" \{\n/);
    expect(drawn.stdout).toContain('  c0 -> c1;\n');

    const dry = await loomAt('workflow', 'dry-run', example, '--message', '{"title":"x","text":"one two three four"}', '--output', 'json');
    expect(dry.status).toBe(0);
    const outputs = JSON.parse(dry.stdout) as { component: string; messages: { body: Record<string, unknown> }[] }[];
    expect(outputs.find((output) => output.component === FILTER)?.messages[0]?.body).toMatchObject({ title: 'X', words: 4 });
    // --until: the transformer is the last that runs; --max-messages 1: the second sample does not enter
    const bounded = await loomAt(
      'workflow',
      'dry-run',
      example,
      '--message',
      '{"title":"a","text":"one two three four"}',
      '--message',
      '{"title":"b","text":"one two three four"}',
      '--until',
      'Clean up',
      '--max-messages',
      '1',
    );
    expect(bounded.status).toBe(0);
    expect(bounded.stdout).toMatch(/^Clean up_[0-9a-f-]{36}\s+\{"title":"A","text":"one two three four","words":4\}$/m);
    expect(bounded.stdout).toMatch(/^Articles_[0-9a-f-]{36}\s+\(truncated: more than 1 messages, the rest dropped\)$/m);
    expect(bounded.stdout).not.toMatch(/^Long enough_/m);
    const badCap = await loomAt('workflow', 'dry-run', example, '--message', '{}', '--max-messages', '-1');
    expect(badCap.stderr).toContain("option '--max-messages <n>' argument '-1' is invalid. expected a whole number, 0 or more");

    const stopped = await loomAt('workflow', 'stop', 'Article pipeline', '--drain', '5');
    expect(stopped.stdout).toMatch(/Article pipeline\s+STOPPED/);
  });

  it('publishes a JSON Lines file in batches, and the same file again publishes nothing twice; a bad line publishes nothing; a stopped workflow refuses every line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-publish-file-'));
    const file = join(dir, 'articles.jsonl');
    const lines = Array.from({ length: 1_200 }, (_, index) => JSON.stringify({ title: `article ${index}`, text: `a long enough article number ${index}` }));
    writeFileSync(file, `${lines.join('\n')}\n\n`);
    expect((await loomAt('workflow', 'start', 'Article pipeline')).status).toBe(0);
    const inletOut = async () =>
      (JSON.parse((await loomAt('workflow', 'status', 'Article pipeline', '--output', 'json')).stdout) as StatusJson).components.find((c) => c.name === INLET)
        ?.messagesOut;

    const first = await loomAt('--output', 'json', 'message', 'publish', 'Article pipeline', '--inlet', INLET, '--file', file);
    expect(first.stderr).toBe('');
    expect(JSON.parse(first.stdout)).toEqual([{ file, accepted: 1_200, duplicate: 0, refused: 0 }]);
    await expect.poll(inletOut, { timeout: 20_000 }).toBe(1_200);

    const again = await loomAt('--output', 'json', 'message', 'publish', 'Article pipeline', '--inlet', INLET, '--file', file);
    expect(JSON.parse(again.stdout)).toEqual([{ file, accepted: 0, duplicate: 1_200, refused: 0 }]);

    const broken = join(dir, 'broken.jsonl');
    writeFileSync(broken, `${lines[0]}\n[1, 2]\n${lines[1]}\n`);
    const refused = await loomAt('message', 'publish', 'Article pipeline', '--inlet', INLET, '--file', broken);
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim()).toBe(`loom: ${broken}:2: a message body must be a JSON object`);
    const both = await loomAt('message', 'publish', 'Article pipeline', '--inlet', INLET, '--file', file, '--body', '{}');
    expect(both.stderr.trim()).toBe('loom: give exactly one of --body and --file');
    expect(await inletOut()).toBe(1_200);
    expect((await loomAt('workflow', 'stop', 'Article pipeline')).status).toBe(0);

    // a stopped workflow accepts none of a batch: each PublishMessages call fails naming every message, counted as refused
    const stopped = await loomAt('--output', 'json', 'message', 'publish', 'Article pipeline', '--inlet', INLET, '--file', file);
    expect(stopped.status).toBe(1);
    expect(JSON.parse(stopped.stdout)).toEqual([{ file, accepted: 0, duplicate: 0, refused: 1_200 }]);
  });

  it('reports a publish to an unknown inlet and a start of an unknown workflow as one line with the status', async () => {
    const unknown = await loomAt('workflow', 'start', 'No such workflow');
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr.trim()).toMatch(/^loom: NOT_FOUND: /);
    const badBody = await loomAt('message', 'publish', 'Article pipeline', '--inlet', INLET, '--body', '[1,2]');
    expect(badBody.status).not.toBe(0);
    expect(badBody.stderr).toMatch(/--body/);
  });

  it("fails a workflow's start when its webhook's port is taken, naming the component's port option", async () => {
    // issue 49 (loud failures): a real listener holds the port the webhook asks for
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as { port: number }).port;
    try {
      const file = join(mkdtempSync(join(tmpdir(), 'loom-listen-')), 'hook.workflow.yaml');
      const options = `{ port: ${taken}, path: /in, authentication: none }`;
      writeFileSync(
        file,
        `name: Taken hook\ncomponents:\n  Intake:\n    kind: source.Webhook\n    options: ${options}\n  Log: sink.Logger\nlinks: [Intake -> Log]\n`,
      );
      expect((await loomAt('workflow', 'push', file)).stderr).toBe('');
      const started = await loomAt('workflow', 'start', 'Taken hook');
      expect(started.status).toBe(1);
      const option = `${derivedInstanceName('Taken hook', 'component', 'Intake')}.options.port`;
      expect(started.stderr).toBe(`loom: FAILED_PRECONDITION: ${option} ${taken} is in use (EADDRINUSE): set ${option} to a free port\n`);
      expect((await loomAt('workflow', 'status', 'Taken hook')).stderr).toMatch(/stored but not running/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
