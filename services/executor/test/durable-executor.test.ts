import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { type ServiceError, status } from '@grpc/grpc-js';
import { COMPONENT_KINDS, type WorkflowConfiguration } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit';
import { closedPort, natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ACKNOWLEDGEMENT_MEANING } from '../src/messaging-mode.js';
import { durableState } from './durable.js';
import { type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

const binary = natsServerBinary('executor service in durable mode');

const INLET = 'Feed_0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const HOOK = 'Hook_1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e';
const ENRICHER = 'Held service_2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f';
const SINK = 'Log_3d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f6a';

/** A loopback HTTP service the enricher calls that answers nobody until released. */
async function heldService(): Promise<{ url: string; release(): void; close(): Promise<void> }> {
  const waiting: ServerResponse[] = [];
  let held = true;
  const answer = (response: ServerResponse): void => void response.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => (held ? waiting.push(response) : answer(response)));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const release = (): void => {
    held = false;
    for (const response of waiting.splice(0)) answer(response);
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/enrich`,
    release,
    close: async () => {
      release();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe.skipIf(binary === undefined)('the executor service in durable mode, on a real nats-server', () => {
  let server: NatsTestServer;
  let harness: ExecutorHarness;
  const cleanups: (() => Promise<void>)[] = [];

  async function startWorkflow(workflow: WorkflowConfiguration): Promise<void> {
    await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
    await call(harness.executor, 'startWorkflow', { name: workflow.name });
    cleanups.push(async () => void (await call(harness.executor, 'stopWorkflow', { name: workflow.name, drainTimeout: { seconds: 0, nanos: 0 } })));
  }

  beforeAll(async () => {
    server = await startNatsServer();
    // a small stream, so that the full-stream test fills it with a few messages
    harness = await startExecutor([`loom.messaging.nats.servers=${server.url}`, 'loom.messaging.stream.maxBytes=4096']);
  }, 120_000);
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    await harness?.stop();
    await server?.close();
  });

  it('says at start that messages are durable and what an acknowledgement means', () => {
    const started = harness.logged().find((line) => line['messaging'] === 'durable');
    expect(started?.['msg']).toBe(`messages durable on NATS JetStream: ${ACKNOWLEDGEMENT_MEANING.durable}`);
    expect(started?.['servers']).toEqual([server.url]);
  });

  it('answers PublishMessage and PublishMessages once stored, a retried id as duplicate, and acknowledges each once written', async () => {
    const name = 'Durable feed_4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a7b';
    await startWorkflow(workflowOf(name, [instance(COMPONENT_KINDS.INLET, INLET), instance(COMPONENT_KINDS.LOGGER, SINK, { level: 'info' })], [[INLET, SINK]]));
    const publish = (messageId: string) =>
      call(harness.executor, 'publishMessage', { workflowName: name, inlet: INLET, body: { n: 1 }, headers: {}, messageId });
    expect(await publish('once')).toEqual({ messageId: 'once', duplicate: false });
    expect(await publish('once')).toEqual({ messageId: 'once', duplicate: true });
    const { results } = await call(harness.executor, 'publishMessages', {
      workflowName: name,
      inlet: INLET,
      messages: ['a', 'b', 'once'].map((messageId) => ({ messageId, body: { n: 2 }, headers: { 'x-loom-source': 'test' } })),
    });
    expect(results.map(({ messageId, accepted, duplicate }) => ({ messageId, accepted, duplicate }))).toEqual([
      { messageId: 'a', accepted: true, duplicate: false },
      { messageId: 'b', accepted: true, duplicate: false },
      { messageId: 'once', accepted: true, duplicate: true },
    ]);
    // JetStream delivered 2 messages: 'once' alone, then 'a' and 'b' stored together as one batch envelope (issue 51)
    await expect.poll(() => durableState(server, name, INLET)).toEqual({ stored: 0, ackPending: 0, undelivered: 0, redelivered: 0, delivered: 2 });
    const written = harness.logged().filter((line) => line['component'] === SINK && line['msg'] === 'message');
    expect(written.map((line) => line['messageId']).sort()).toEqual(['a', 'b', 'once']);
  });

  it('answers RESOURCE_EXHAUSTED naming the workflow when its stream is full (and a webhook 429), then takes messages again once it drained', async () => {
    const name = 'Full feed_5f6a7b8c-9d0e-4f1a-8b2c-3d4e5f6a7b8c';
    const service = await heldService();
    cleanups.push(() => service.close());
    const port = await closedPort();
    await startWorkflow(
      workflowOf(
        name,
        [
          instance(COMPONENT_KINDS.INLET, INLET),
          instance(COMPONENT_KINDS.WEBHOOK, HOOK, { port, path: '/in', authentication: 'none' }),
          instance(COMPONENT_KINDS.HTTP_ENRICHER, ENRICHER, { url: service.url, method: 'POST', target_field: 'answer', timeout: 120_000 }),
        ],
        [
          [INLET, ENRICHER],
          [HOOK, ENRICHER],
        ],
      ),
    );
    const padding = 'x'.repeat(300);
    let accepted = 0;
    let refused: ServiceError | undefined;
    while (refused === undefined && accepted < 100) {
      const publishing = call(harness.executor, 'publishMessage', {
        workflowName: name,
        inlet: INLET,
        body: { accepted, padding },
        headers: {},
        messageId: `m${accepted}`,
      });
      refused = await publishing.then(
        () => undefined,
        (error: unknown) => error as ServiceError,
      );
      if (refused === undefined) accepted++;
    }
    expect(accepted).toBeGreaterThan(0);
    expect(refused?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(refused?.details).toContain(`workflow '${name}'`);
    const hook = await fetch(`http://127.0.0.1:${port}/in`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ padding }),
    });
    expect(hook.status).toBe(429);
    service.release();
    await expect.poll(() => durableState(server, name, INLET).then((state) => state.stored)).toBe(0);
    expect(
      await call(harness.executor, 'publishMessage', { workflowName: name, inlet: INLET, body: { padding }, headers: {}, messageId: 'after' }),
    ).toMatchObject({
      duplicate: false,
    });
    const posted = await fetch(`http://127.0.0.1:${port}/in`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ padding }),
    });
    expect(posted.status).toBe(202);
  });
});
