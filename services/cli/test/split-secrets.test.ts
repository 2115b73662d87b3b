import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { ExecutorClient, SecretsClient, WorkflowStoreClient } from '@loom/contracts';
import { COMPONENT_KINDS, componentInstance } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, createClient } from '@loom/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LoomProcess, startLoomProcess } from './loom-process.js';
import { uuid } from './scheduled-workflows.js';

const TOKEN = 'Bearer split-process-secret-7e41c09b';
const EXECUTOR_TOKEN = 'executor-token-split-0123456789abcd';
const INLET = `Orders_${uuid(800)}`;
const ENRICHER = `Echo_${uuid(801)}`;
const SINK = `Log_${uuid(802)}`;

// two `loom serve` processes, not compositions in this one: that each process redacts with its own redactor is the point
describe('secrets and executor in two processes', () => {
  let services: LoomProcess;
  let executor: LoomProcess;
  let echo: Server;
  const seen: string[] = [];

  beforeAll(async () => {
    // an endpoint that answers with the credential it was sent: the enricher puts it into the message, the logger logs it
    echo = createServer((request, response) => {
      seen.push(request.headers.authorization ?? '');
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ echoed: request.headers.authorization ?? '' }));
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const common = [
      '--set',
      `loom.auth.tokens.executor=${EXECUTOR_TOKEN}`,
      '--set',
      'loom.auth.allowAnonymous=true',
      '--set',
      'loom.experimental.enabled=true',
      '--set',
      'loom.scripts.python.warmInterpreters=0',
    ];
    services = await startLoomProcess(['--services', 'secrets,config-store,audit', ...common]);
    executor = await startLoomProcess([
      '--services',
      'executor',
      ...common,
      ...['secrets', 'config-store', 'audit', 'skill-gateway'].flatMap((service) => ['--set', `loom.services.${service}.address=${services.address}`]),
    ]);
  });
  afterAll(async () => {
    for (const loom of [executor, services]) {
      loom.child.kill('SIGTERM');
      await loom.exited;
    }
    echo.closeAllConnections();
    await new Promise((resolve) => echo.close(resolve));
  });

  it("keeps the decrypted value out of the executor's log: the executor registers what it decrypted with its own redactor", async () => {
    const secrets = createClient(SecretsClient, services.address, { retry: false });
    const store = createClient(WorkflowStoreClient, services.address, { retry: false });
    const run = createClient(ExecutorClient, executor.address, { retry: false });
    try {
      await call(secrets, 'createVariable', { key: 'ECHO_TOKEN', value: TOKEN, encrypted: true, userUuid: '' });
      const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/echo`;
      const components = [
        componentInstance(COMPONENT_KINDS.INLET, INLET),
        componentInstance(COMPONENT_KINDS.HTTP_ENRICHER, ENRICHER, { url, headers: { authorization: '$$ECHO_TOKEN' }, target_field: 'echo' }),
        componentInstance(COMPONENT_KINDS.LOGGER, SINK),
      ];
      const workflow = {
        name: `Echo_${uuid(803)}`,
        autoStart: false,
        components,
        links: [
          { from: INLET, to: ENRICHER },
          { from: ENRICHER, to: SINK },
        ],
        resources: [],
        skills: [],
        workflowResources: [],
      };
      const { summary } = await call(store, 'putWorkflow', { workflow: workflowToProto(workflow), expectedVersion: undefined });
      const name = summary?.name ?? '';
      await call(run, 'startWorkflow', { name });
      await call(run, 'publishMessage', { workflowName: name, inlet: INLET, body: { sku: 'a-1' }, headers: {}, messageId: '' });
      await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(1);
      expect(seen[0]).toBe(TOKEN);
      // the logger logged the message with the echoed credential in it, redacted
      await expect.poll(() => executor.logLines.some((line) => line.includes('"component":') && line.includes('[REDACTED]')), { timeout: 10_000 }).toBe(true);
      await call(run, 'stopWorkflow', { name, drainTimeout: undefined });
      expect(executor.logLines.join('\n')).not.toContain('split-process-secret');
      expect(services.logLines.join('\n')).not.toContain('split-process-secret');
    } finally {
      secrets.close();
      store.close();
      run.close();
    }
  });
});
