import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loomServiceNames } from '@loom/contracts';
import { derivedInstanceName } from '@loom/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

// grpcurl as another team's service meets loom: built from its Go module (scripts/test-env/grpcurl.mjs), it knows no
// loom type but what server reflection tells it (no -protoset, no -proto)
// the identity and role the compose stack gives its operator token (deploy/compose/docker-compose.yml)
const TOKEN = 'operator-token-for-the-grpcurl-test';
const example = fileURLToPath(new URL('../../../examples/article-pipeline.workflow.yaml', import.meta.url));
const NAME = 'Article pipeline';
const INLET = derivedInstanceName(NAME, 'component', 'Articles');
const SINK = derivedInstanceName(NAME, 'component', 'Log');
/** What grpcurl lists besides loom's services: health and both versions of reflection. */
const GRPC_SERVICES = ['grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection'];

/** A tool `npm test` builds is missing: the message says how to get it for a run of one file. */
class MissingGrpcurlError extends Error {
  constructor() {
    super(
      'LOOM_GRPCURL is not set: run the tests through `npm test`, which builds grpcurl, or run ' +
        '`node scripts/test-env/grpcurl.mjs` and export the LOOM_GRPCURL=... line it prints before running this file',
    );
    this.name = 'MissingGrpcurlError';
  }
}

interface GrpcurlResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

let loom: InProcessLoom;
beforeAll(async () => {
  if (!process.env.LOOM_GRPCURL) throw new MissingGrpcurlError();
  loom = await startLoom([
    '--set',
    `loom.auth.tokens.operator=${TOKEN}`,
    '--set',
    'loom.auth.roles.operator=admin',
    '--set',
    'loom.experimental.enabled=true',
    '--set',
    'loom.scripts.python.warmInterpreters=0',
  ]);
});
afterAll(async () => {
  await loom?.stop();
});

/** Runs grpcurl against loom (plaintext, with the token as docs/operations.md passes it); never blocks this process, which serves loom. */
function grpcurl(args: readonly string[], options: { data?: unknown; token?: boolean } = {}): Promise<GrpcurlResult> {
  const command = process.env.LOOM_GRPCURL ?? 'grpcurl';
  const header = options.token === false ? [] : ['-H', `authorization: Bearer ${TOKEN}`];
  const data = options.data === undefined ? [] : ['-d', JSON.stringify(options.data)];
  return new Promise((resolve, reject) => {
    execFile(command, ['-plaintext', ...header, ...data, loom.address, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error === null) resolve({ code: 0, stdout, stderr });
      else if (typeof error.code === 'number') resolve({ code: error.code, stdout, stderr });
      else reject(new Error(`${command} did not run: ${error.message}`, { cause: error }));
    });
  });
}

describe('grpcurl through server reflection only', () => {
  it('lists every loom.v1 service, health and reflection', async () => {
    const listed = await grpcurl(['list'], { token: false });
    expect(listed.stderr).toBe('');
    expect(listed.stdout.trim().split('\n')).toEqual([...loomServiceNames, ...GRPC_SERVICES].sort());
  });

  it('describes every service with its proto comments, and the messages they use down to the well-known types', async () => {
    for (const service of [...loomServiceNames, ...GRPC_SERVICES]) {
      const described = await grpcurl(['describe', service], { token: false });
      expect({ service, ...described }).toMatchObject({ service, code: 0, stderr: '' });
      expect(described.stdout).toContain(`${service} is a service:`);
    }
    // a comment of workflow.proto's, and one of the health service's own file
    const workflow = await grpcurl(['describe', 'loom.v1.Workflow'], { token: false });
    expect(workflow.stdout).toContain('// A workflow configuration: components joined by links, with the resources they use.');
    const health = await grpcurl(['describe', 'grpc.health.v1.Health.Watch'], { token: false });
    expect(health.stdout).toContain('Performs a watch for the serving status of the requested service.');
    // a message that holds a Timestamp, which reflection 1.0.4 could not resolve
    const metadata = await grpcurl(['describe', 'loom.v1.WorkflowMetadata'], { token: false });
    expect(metadata.code).toBe(0);
    expect(metadata.stdout).toMatch(/\.google\.protobuf\.Timestamp updated_at = \d+;/);
  });

  it('answers an unknown symbol NOT_FOUND', async () => {
    const unknown = await grpcurl(['describe', 'loom.v1.NoSuchThing'], { token: false });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('Symbol not found: loom.v1.NoSuchThing');
  });

  it('calls health Check, ListWorkflows and PublishMessage to a running workflow', async () => {
    const health = await grpcurl(['grpc.health.v1.Health/Check'], { token: false, data: { service: 'loom.v1.Executor' } });
    expect(health).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(health.stdout)).toEqual({ status: 'SERVING' });

    expect((await runCli(['--address', loom.address, '--token', TOKEN, 'workflow', 'push', example])).status).toBe(0);
    expect((await runCli(['--address', loom.address, '--token', TOKEN, 'workflow', 'start', NAME])).status).toBe(0);

    const listed = await grpcurl(['loom.v1.WorkflowStore/ListWorkflows'], { data: {} });
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    const workflows = (JSON.parse(listed.stdout) as { workflows: { name: string }[] }).workflows;
    expect(workflows.map((workflow) => workflow.name)).toEqual([expect.stringMatching(/^Article pipeline_[0-9a-f-]{36}$/)]);

    const published = await grpcurl(['loom.v1.Executor/PublishMessage'], {
      data: { workflowName: NAME, inlet: INLET, body: { title: 'graphs', text: 'a long enough article about graphs' }, messageId: 'grpcurl-1' },
    });
    expect(published).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(published.stdout)).toEqual({ messageId: 'grpcurl-1' });
    await expect
      .poll(async () => {
        const { stdout } = await grpcurl(['loom.v1.Executor/GetWorkflowStatus'], { data: { name: NAME } });
        return (JSON.parse(stdout) as { components: { name: string; messagesIn?: string }[] }).components.find((component) => component.name === SINK);
      })
      .toMatchObject({ messagesIn: '1' });
    const status = JSON.parse((await grpcurl(['loom.v1.Executor/GetWorkflowStatus'], { data: { name: NAME } })).stdout) as { state: string; startedAt: string };
    // an enum and a Timestamp as protobuf JSON writes them
    expect(status.state).toBe('WORKFLOW_STATE_RUNNING');
    expect(status.startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

    // without the token the same call is refused: reflection and health are open, the API is not
    const anonymous = await grpcurl(['loom.v1.Executor/PublishMessage'], { token: false, data: { workflowName: NAME, inlet: INLET, body: {} } });
    expect(anonymous.stderr).toContain('Code: Unauthenticated');

    // a refusal's google.rpc.BadRequest details, decoded by grpcurl through reflection too
    const refused = await grpcurl(['loom.v1.Executor/PublishMessage'], { data: { workflowName: NAME, inlet: INLET } });
    expect(refused.stderr).toContain('Code: InvalidArgument');
    expect(refused.stderr).toContain('"@type": "type.googleapis.com/google.rpc.BadRequest"');
  });

  it("runs docs/operations.md's grpcurl block as it is written", async () => {
    const operations = readFileSync(fileURLToPath(new URL('../../../docs/operations.md', import.meta.url)), 'utf8');
    const block = /Server reflection is on, so grpcurl works[^]*?```sh\n([^]*?)```/.exec(operations)?.[1];
    expect(block).toContain('grpcurl');
    const scratch = mkdtempSync(join(tmpdir(), 'loom-grpcurl-docs-'));
    try {
      mkdirSync(join(scratch, 'secrets'));
      writeFileSync(join(scratch, 'secrets/token-operator'), TOKEN);
      // the compose stack's skill gateway is 127.0.0.1:8106; this loom runs every service on one port. --norc: bash
      // reads /etc/bash.bashrc when its standard input is a socket, as node's pipes are
      const script = (block ?? '').replaceAll('127.0.0.1:8106', loom.address);
      const result = await new Promise<GrpcurlResult>((resolve) => {
        const env = { PATH: `${dirname(process.env.LOOM_GRPCURL ?? '')}:${process.env.PATH ?? ''}` };
        execFile('bash', ['--norc', '--noprofile', '-euo', 'pipefail', '-c', script], { cwd: scratch, env, timeout: 60_000 }, (error, stdout, stderr) => {
          resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
        });
      });
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toContain('loom.v1.SkillGateway is a service:');
      expect(result.stdout).toContain('"status": "SERVING"');
      expect(result.stdout).toContain('"name": "entities"');
      expect(result.stdout).toContain('"name": "keywords"');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
