import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { status } from '@grpc/grpc-js';
import { type PublishedMessage, type PublishResult, type PublishStreamResponse, WorkflowState } from '@loom/contracts';
import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, fieldViolationsOf } from '@loom/service-kit';
import { failure } from '@loom/service-kit/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PUBLISH_BATCH } from '../src/publishing.js';
import { DEFAULT_MAX_BATCH } from '../src/runtime/options.js';
import { type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

const INLET = 'Feed_0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const ENRICHER = 'Slow service_1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e';
/** The workflow of the current test. */
let workflowName = '';

/** The links' capacity in these tests (loom.executor.queueCapacity): small, so that full queues come quickly. */
const QUEUE_CAPACITY = 64;

/** Most messages the workflow below accepts while its service holds every call: one batch in the enricher plus a full queue. */
const HELD_CAPACITY = QUEUE_CAPACITY * 2;

/** Waits until the service holds the enricher's batch and the queue in front of it is full; answers the held calls. */
async function fullyHeld(harness: ExecutorHarness, service: HeldService): Promise<number> {
  await expect.poll(() => enricherQueueDepth(harness), { timeout: 10_000 }).toBe(QUEUE_CAPACITY);
  // every message the enricher took has reached the service and waits there
  const taken = await enricherCounter(harness, 'messagesIn');
  await expect.poll(() => service.heldCalls, { timeout: 10_000 }).toBe(taken);
  expect(taken).toBeGreaterThanOrEqual(1);
  expect(taken).toBeLessThanOrEqual(Math.min(DEFAULT_MAX_BATCH, QUEUE_CAPACITY));
  return taken;
}

/** A loopback HTTP service the enricher calls: it records each message's `n` and, while held, answers nobody. */
class HeldService {
  readonly received: number[] = [];
  private readonly waiting: ServerResponse[] = [];
  private held = true;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<HeldService> {
    const server = createServer();
    const service = new HeldService(server);
    server.on('request', (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        service.received.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { n: number }).n);
        if (service.held) service.waiting.push(response);
        else answer(response);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return service;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/enrich`;
  }

  get heldCalls(): number {
    return this.waiting.length;
  }

  release(): void {
    this.held = false;
    for (const response of this.waiting.splice(0)) answer(response);
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function answer(response: ServerResponse): void {
  response.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
}

// one executor for the file (its start is the slow part); each test runs a workflow of its own
let harness: ExecutorHarness;
beforeAll(async () => {
  harness = await startExecutor([`loom.executor.queueCapacity=${QUEUE_CAPACITY}`]);
}, 120_000);
afterAll(async () => {
  await harness.stop();
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let workflows = 0;

/** Starts a workflow inlet → enricher (calling a new held service): answers the executor and the service. */
async function startFeed(): Promise<{ harness: ExecutorHarness; service: HeldService }> {
  const service = await HeldService.start();
  cleanups.push(() => service.close());
  workflowName = `Batch feed ${++workflows}_2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f`;
  const name = workflowName;
  cleanups.push(async () => {
    const state = (await call(harness.executor, 'getWorkflowStatus', { name })).state;
    if (state === WorkflowState.WORKFLOW_STATE_RUNNING) await call(harness.executor, 'stopWorkflow', { name, drainTimeout: { seconds: 0, nanos: 0 } });
  });
  const workflow = workflowOf(
    workflowName,
    [
      instance(COMPONENT_KINDS.INLET, INLET),
      instance(COMPONENT_KINDS.HTTP_ENRICHER, ENRICHER, { url: service.url, method: 'POST', target_field: 'answer', timeout: 120_000 }),
    ],
    [[INLET, ENRICHER]],
  );
  await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
  await call(harness.executor, 'startWorkflow', { name: workflowName });
  return { harness, service };
}

const messagesFrom = (first: number, count: number, padding = ''): PublishedMessage[] =>
  Array.from({ length: count }, (_, offset) => ({ body: { n: first + offset, padding }, headers: {}, messageId: `m-${first + offset}` }));

async function enricherCounter(harness: ExecutorHarness, counter: 'queueDepth' | 'messagesIn'): Promise<number> {
  const current = await call(harness.executor, 'getWorkflowStatus', { name: workflowName });
  return current.components.find((component) => component.name === ENRICHER)?.[counter] ?? -1;
}

const enricherQueueDepth = (harness: ExecutorHarness): Promise<number> => enricherCounter(harness, 'queueDepth');

describe('batch publishing', () => {
  it('answers one result per message in order: per-message errors naming the field, duplicates by message_id not published again', async () => {
    const { service } = await startFeed();
    service.release();
    const first = await call(harness.executor, 'publishMessages', {
      workflowName: workflowName,
      inlet: INLET,
      messages: [
        { body: { n: 1 }, headers: {}, messageId: 'a' },
        { body: undefined, headers: {}, messageId: 'b' },
        { body: { n: 3 }, headers: {}, messageId: '' },
      ],
    });
    expect(first.results.map((result) => [result.messageId, result.accepted, result.duplicate])).toEqual([
      ['a', true, false],
      ['b', false, false],
      [first.results[2]?.messageId, true, false],
    ]);
    expect(first.results[1]?.error).toMatchObject({ code: status.INVALID_ARGUMENT, field: 'messages[1].body' });
    expect(first.results[2]?.messageId).toMatch(/^[0-9a-f-]{36}$/);

    const again = await call(harness.executor, 'publishMessages', {
      workflowName: workflowName,
      inlet: INLET,
      messages: [
        { body: { n: 1 }, headers: {}, messageId: 'a' },
        { body: { n: 4 }, headers: {}, messageId: 'd' },
      ],
    });
    expect(again.results.map((result) => [result.messageId, result.accepted, result.duplicate])).toEqual([
      ['a', true, true],
      ['d', true, false],
    ]);
    // none accepted: the call fails with the first refusal's code, every refusal in the text and the details
    const noneAccepted = await failure(
      call(harness.executor, 'publishMessages', {
        workflowName: workflowName,
        inlet: INLET,
        messages: [
          { body: undefined, headers: {}, messageId: 'e' },
          { body: undefined, headers: {}, messageId: 'f' },
        ],
      }),
    );
    expect(noneAccepted.code).toBe(status.INVALID_ARGUMENT);
    expect(noneAccepted.details).toBe(
      'no message of the 2 was accepted: messages[0].body: is required: a JSON object; messages[1].body: is required: a JSON object',
    );
    expect(fieldViolationsOf(noneAccepted)).toEqual([
      { field: 'messages[0].body', description: 'is required: a JSON object', reason: 'INVALID_ARGUMENT' },
      { field: 'messages[1].body', description: 'is required: a JSON object', reason: 'INVALID_ARGUMENT' },
    ]);
    expect((await call(harness.executor, 'publishMessages', { workflowName: workflowName, inlet: INLET, messages: [] })).results).toEqual([]);
    const single = await call(harness.executor, 'publishMessage', { workflowName: workflowName, inlet: INLET, body: { n: 4 }, headers: {}, messageId: 'd' });
    expect(single).toEqual({ messageId: 'd', duplicate: true });
    await expect.poll(() => [...service.received].sort()).toEqual([1, 3, 4]);

    const tooMany = await failure(
      call(harness.executor, 'publishMessages', { workflowName: workflowName, inlet: INLET, messages: messagesFrom(0, MAX_PUBLISH_BATCH + 1) }),
    );
    expect(tooMany.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(tooMany).map((violation) => violation.field)).toEqual(['messages']);
    const noInlet = await failure(call(harness.executor, 'publishMessages', { workflowName: workflowName, inlet: 'Nothing_x', messages: messagesFrom(0, 1) }));
    expect(noInlet.code).toBe(status.NOT_FOUND);
    expect(service.received).toHaveLength(3);
  }, 60_000);

  it('acknowledges exactly the accepted messages when the workflow stops mid-batch: each acknowledged one is processed, no other', async () => {
    const { service } = await startFeed();
    // the batch fills the queue behind the held service and waits inside it
    const batch = call(
      harness.executor,
      'publishMessages',
      { workflowName: workflowName, inlet: INLET, messages: messagesFrom(0, 200) },
      { deadlineMs: 120_000 },
    );
    const held = await fullyHeld(harness, service);

    const stopping = call(harness.executor, 'stopWorkflow', { name: workflowName, drainTimeout: { seconds: 60, nanos: 0 } }, { deadlineMs: 120_000 });
    await expect
      .poll(async () => (await call(harness.executor, 'getWorkflowStatus', { name: workflowName })).state)
      .toBe(WorkflowState.WORKFLOW_STATE_STOPPING);
    service.release();
    const { results } = await batch;
    expect((await stopping).state).toBe(WorkflowState.WORKFLOW_STATE_STOPPED);

    const accepted = results.filter((result) => result.accepted);
    // the messages that fit before the stop, and the one waiting for room when it came
    expect(accepted.length).toBe(held + QUEUE_CAPACITY + 1);
    expect(accepted.length).toBeLessThan(200);
    // accepted ones form a prefix: order is kept, and after the first refusal nothing more went in
    expect(results.slice(0, accepted.length).every((result) => result.accepted)).toBe(true);
    for (const result of results.slice(accepted.length)) {
      expect(result).toMatchObject({ accepted: false, error: { code: status.FAILED_PRECONDITION } });
    }
    const acknowledged = accepted.map((result) => Number(result.messageId.slice(2)));
    expect([...service.received].sort((a, b) => a - b)).toEqual(acknowledged.sort((a, b) => a - b));
  }, 60_000);

  it('slows a streaming publisher down while the queues are full, drops nothing, and acknowledges every message once', async () => {
    const { service } = await startFeed();
    const stream = harness.executor.publishStream();
    const acks: PublishResult[] = [];
    stream.on('data', (response: PublishStreamResponse) => acks.push(...response.results));
    const ended = new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('error', reject);
    });

    // a message per request (a continuous feed), 8 KiB each: more than the queues, the server's read-ahead and the HTTP/2 windows hold
    const requests = 600;
    const padding = 'x'.repeat(8192);
    let written = 0;
    let waitedForDrain = false;
    const writing = (async () => {
      for (let index = 0; index < requests; index++) {
        const request =
          index === 0
            ? { workflowName: workflowName, inlet: INLET, messages: messagesFrom(0, 1, padding) }
            : { workflowName: '', inlet: '', messages: messagesFrom(index, 1, padding) };
        written++;
        if (!stream.write(request)) {
          waitedForDrain = true;
          await once(stream, 'drain');
        }
      }
      stream.end();
    })();

    await fullyHeld(harness, service);
    // held back: the writer waits for the transport, and no more is acknowledged than the workflow holds
    await expect.poll(() => waitedForDrain, { timeout: 10_000 }).toBe(true);
    expect(written).toBeLessThan(requests);
    expect(acks.length).toBeLessThanOrEqual(HELD_CAPACITY);
    // and it still waits: the stream is above its high-water mark and has not drained
    expect(stream.writableNeedDrain).toBe(true);
    expect(acks.every((ack) => ack.accepted)).toBe(true);

    service.release();
    await writing;
    await ended;
    expect(acks).toHaveLength(requests);
    expect(acks.every((ack) => ack.accepted && !ack.duplicate)).toBe(true);
    expect(acks.map((ack) => ack.messageId)).toEqual(messagesFrom(0, requests).map((message) => message.messageId));
    await expect.poll(() => service.received.length, { timeout: 20_000 }).toBe(requests);
    expect(new Set(service.received).size).toBe(requests);
  }, 60_000);
});
