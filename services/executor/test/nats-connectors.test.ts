import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { SecretsClient, WorkflowState } from '@loom/contracts';
import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { SubjectStreamFullError } from '@loom/messaging';
import { call, createClient, fieldViolationsOf } from '@loom/service-kit';
import { failure } from '@loom/service-kit/testing';
import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { connect, DiscardPolicy, headers as natsHeaders, type JetStreamManager, type Msg, type NatsConnection, StorageType } from 'nats';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { natsPublisherFactory } from '../src/components/nats-publisher.js';
import { natsSubscriberFactory } from '../src/components/nats-subscriber.js';
import { type LoomMessage, type Outcome, type Processor, type SignalSource, type Source } from '../src/runtime/component.js';
import { componentContext } from './component-context.js';
import { type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

const binary = natsServerBinary('NATS connectors');
const TOKEN = 'nats-token-5b0e6d1c9a24f873';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const json = (value: unknown): Uint8Array => text(JSON.stringify(value));
const bodyOf = (message: Msg): unknown => JSON.parse(new TextDecoder().decode(message.data));

let server: NatsTestServer;
let admin: NatsConnection;
let manager: JetStreamManager;
const running: { stop(): Promise<void> }[] = [];

/** The connection options of a connector on the test server. */
const connection = (): Record<string, unknown> => ({ servers: server.url, token: TOKEN });

/** A NATS Subscriber with these options, started with `emit`. */
async function subscriber(options: Record<string, unknown>, emit: (message: LoomMessage, withdrawal?: SignalSource) => Promise<void>): Promise<Source> {
  const { context } = componentContext(
    COMPONENT_KINDS.NATS_SUBSCRIBER,
    { ...connection(), ...options },
    { name: 'orders_in', workflowName: 'nats_test', onFail: 'record' },
  );
  const source = (await natsSubscriberFactory.create(context)) as Source;
  running.push(source);
  await source.start(emit);
  return source;
}

/** A NATS Publisher with these options. */
async function publisher(options: Record<string, unknown>): Promise<Processor> {
  const { context } = componentContext(
    COMPONENT_KINDS.NATS_PUBLISHER,
    { ...connection(), ...options },
    { name: 'orders_out', workflowName: 'nats_test', onFail: 'throw' },
  );
  const processor = (await natsPublisherFactory.create(context)) as Processor;
  running.push({ stop: () => processor.close() });
  return processor;
}

/** Collects what a source emits. */
function collector(): { received: LoomMessage[]; emit: (message: LoomMessage) => Promise<void> } {
  const received: LoomMessage[] = [];
  return { received, emit: (message) => Promise.resolve(void received.push(message)) };
}

/** Collects the messages of a core subject the test listens to. */
async function listen(subject: string): Promise<Msg[]> {
  const received: Msg[] = [];
  const subscription = admin.subscribe(subject, { callback: (error, message) => void (error === null && received.push(message)) });
  running.push({ stop: () => Promise.resolve(subscription.unsubscribe()) });
  await admin.flush();
  return received;
}

/** Unsettled and undelivered messages of a durable consumer. */
async function backlog(stream: string, durable: string): Promise<{ pending: number; unacknowledged: number }> {
  const info = await manager.consumers.info(stream, durable);
  return { pending: info.num_pending, unacknowledged: info.num_ack_pending };
}

const message = (id: string, body: Record<string, unknown>, headers: Record<string, string> = {}): LoomMessage => ({ id, body, headers });

beforeAll(async () => {
  if (binary === undefined) return;
  server = await startNatsServer({ token: TOKEN });
  admin = await connect({ servers: server.url, token: TOKEN });
  manager = await admin.jetstreamManager();
  await manager.streams.add({ name: 'ORDERS', subjects: ['orders.>'], storage: StorageType.File });
  await manager.streams.add({ name: 'SMALL', subjects: ['small.>'], storage: StorageType.File, max_msgs: 2, discard: DiscardPolicy.New });
});
afterEach(async () => {
  for (const item of running.splice(0).reverse()) await item.stop();
});
afterAll(async () => {
  await admin?.close();
  await server?.close();
});

describe.skipIf(binary === undefined)('NATS connectors on a real nats-server', () => {
  describe('the NATS Subscriber', () => {
    it('turns core messages into loom messages: JSON bodies, non-JSON wrapped, headers and the trace context carried', async () => {
      const { received, emit } = collector();
      await subscriber({ subject: 'events.*' }, emit);
      const headers = natsHeaders();
      headers.set('traceparent', TRACEPARENT);
      headers.set('X-Tenant', 'acme');
      headers.set('Nats-Msg-Id', 'event-1');
      admin.publish('events.created', json({ n: 1 }), { headers });
      admin.publish('events.created', text('plain words'));
      admin.publish('events.created', json([1, 2]));
      await expect.poll(() => received.length).toBe(3);
      expect(received[0]).toEqual({ id: 'event-1', body: { n: 1 }, headers: { traceparent: TRACEPARENT, 'x-tenant': 'acme', 'nats-msg-id': 'event-1' } });
      expect(received.slice(1).map((each) => each.body)).toEqual([{ data: 'plain words' }, { data: '[1,2]' }]);
    });

    it('with non_json refuse, drops what is not a JSON object and goes on', async () => {
      const { received, emit } = collector();
      await subscriber({ subject: 'strict.events', non_json: 'refuse', queue_group: 'loom' }, emit);
      admin.publish('strict.events', text('not json'));
      admin.publish('strict.events', json({ n: 2 }));
      await expect.poll(() => received.length).toBe(1);
      expect(received[0]!.body).toEqual({ n: 2 });
    });

    it('acknowledges a JetStream message once the workflow took it: after a restart, nothing comes again', async () => {
      const js = admin.jetstream();
      for (const n of [1, 2, 3]) await js.publish('orders.created', json({ n }), { msgID: `order-${n}` });
      const first = collector();
      const source = await subscriber({ subject: 'orders.created', stream: 'ORDERS', durable_name: 'taken' }, first.emit);
      await expect.poll(() => first.received.length).toBe(3);
      expect(first.received.map((each) => [each.id, each.body])).toEqual([
        ['order-1', { n: 1 }],
        ['order-2', { n: 2 }],
        ['order-3', { n: 3 }],
      ]);
      await expect.poll(() => backlog('ORDERS', 'taken')).toEqual({ pending: 0, unacknowledged: 0 });
      await source.stop();
      await source.stop();

      const second = collector();
      await subscriber({ subject: 'orders.created', stream: 'ORDERS', durable_name: 'taken' }, second.emit);
      await js.publish('orders.created', json({ n: 4 }), { msgID: 'order-4' });
      await expect.poll(() => second.received.length).toBe(1);
      expect(second.received[0]!.id).toBe('order-4');
    });

    it('gives a JetStream message the workflow never took back to the stream when stopped; the next start gets it again', async () => {
      const js = admin.jetstream();
      await js.publish('orders.held', json({ n: 7 }), { msgID: 'order-7' });
      const offered: string[] = [];
      // the workflow's queues are full: emit waits until the message is withdrawn
      const held = (offeredMessage: LoomMessage, withdrawal?: SignalSource): Promise<void> => {
        offered.push(offeredMessage.id);
        return new Promise((_resolve, reject) => withdrawal?.signal.addEventListener('abort', () => reject(new Error('withdrawn'))));
      };
      const source = await subscriber({ subject: 'orders.held', stream: 'ORDERS', durable_name: 'held' }, held);
      await expect.poll(() => offered).toEqual(['order-7']);
      await source.stop();

      const { received, emit } = collector();
      await subscriber({ subject: 'orders.held', stream: 'ORDERS', durable_name: 'held' }, emit);
      await expect.poll(() => received.map((each) => each.id)).toEqual(['order-7']);
      await expect.poll(() => backlog('ORDERS', 'held')).toEqual({ pending: 0, unacknowledged: 0 });
    });

    it('with non_json refuse, terminates a JetStream message that is not a JSON object: it never comes again', async () => {
      const js = admin.jetstream();
      await js.publish('orders.mixed', text('not json'), { msgID: 'mixed-1' });
      await js.publish('orders.mixed', json({ n: 2 }), { msgID: 'mixed-2' });
      const { received, emit } = collector();
      await subscriber({ subject: 'orders.mixed', stream: 'ORDERS', durable_name: 'mixed', non_json: 'refuse' }, emit);
      await expect.poll(() => received.map((each) => each.id)).toEqual(['mixed-2']);
      await expect.poll(() => backlog('ORDERS', 'mixed')).toEqual({ pending: 0, unacknowledged: 0 });
    });

    it('refuses bad options at create, naming the option', async () => {
      const { context } = componentContext(
        COMPONENT_KINDS.NATS_SUBSCRIBER,
        { servers: 'http://localhost', subject: 'a' },
        { name: 'orders_in', workflowName: 'nats_test', onFail: 'record' },
      );
      await expect(natsSubscriberFactory.create(context)).rejects.toMatchObject({
        violations: [expect.objectContaining({ field: 'orders_in.options.servers' })],
      });
    });
  });

  describe('the NATS Publisher', () => {
    it('publishes each body to its subject with its headers and trace context; a missing subject field fails the message', async () => {
      const delivered = await listen('copies.>');
      const sink = await publisher({ subject: 'copies.{region}' });
      const outcomes = await sink.process(
        [
          message('m-1', { region: 'eu', n: 1 }, { traceparent: TRACEPARENT, 'x-tenant': 'acme' }),
          message('m-2', { region: 'us', n: 2 }),
          message('m-3', { n: 3 }),
          message('m-4', { region: 'a.b', n: 4 }),
        ],
        new AbortController().signal,
      );
      expect(outcomes.map((each) => each.ok)).toEqual([true, true, false, false]);
      expect(outcomes[2]).toMatchObject({ transient: false, error: "the subject template needs field 'region', which the message does not have" });
      await expect.poll(() => delivered.length).toBe(2);
      expect(delivered.map((each) => [each.subject, bodyOf(each)])).toEqual([
        ['copies.eu', { region: 'eu', n: 1 }],
        ['copies.us', { region: 'us', n: 2 }],
      ]);
      expect(delivered[0]!.headers?.get('traceparent')).toBe(TRACEPARENT);
      expect(delivered[0]!.headers?.get('x-tenant')).toBe('acme');
    });

    it('waits for JetStream when a stream takes the subject; a full stream fails the message, retryably', async () => {
      const sink = await publisher({ subject: 'small.orders' });
      const batch = ['s-1', 's-2', 's-3'].map((id) => message(id, { id }));
      const outcomes: Outcome[] = [];
      for (const each of batch) outcomes.push(...(await sink.process([each], new AbortController().signal)));
      expect(outcomes.slice(0, 2)).toEqual([
        { ok: true, outputs: [] },
        { ok: true, outputs: [] },
      ]);
      expect(outcomes[2]).toMatchObject({ ok: false, transient: true });
      expect((outcomes[2] as { cause: unknown }).cause).toBeInstanceOf(SubjectStreamFullError);
      expect((await manager.streams.info('SMALL')).state.messages).toBe(2);
      const stored = await manager.streams.getMessage('SMALL', { seq: 1 });
      expect([stored.header.get('Nats-Msg-Id'), stored.json()]).toEqual(['s-1', { id: 's-1' }]);
    });

    it('with jetstream on, fails for good a subject no stream takes', async () => {
      const sink = await publisher({ subject: 'nowhere.orders', jetstream: true });
      const [result] = await sink.process([message('x-1', { n: 1 })], new AbortController().signal);
      expect(result).toMatchObject({ ok: false, transient: false, error: expect.stringContaining("no JetStream stream takes subject 'nowhere.orders'") });
    });
  });
});

const SUBSCRIBER = 'Orders in_3d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f6a';
const PUBLISHER = 'Orders out_4e5f6a7b-8c9d-4e0f-9a1b-2c3d4e5f6a7b';

/** NATS Subscriber (a stream's durable consumer) → NATS Publisher (a core subject per `n`), both with these options added. */
function relayWorkflow(name: string, subscriberOptions: Record<string, unknown> = {}, publisherOptions: Record<string, unknown> = {}) {
  return workflowOf(
    name,
    [
      instance(COMPONENT_KINDS.NATS_SUBSCRIBER, SUBSCRIBER, {
        servers: server.url,
        subject: 'orders.relay',
        stream: 'ORDERS',
        durable_name: 'relay',
        ...subscriberOptions,
      }),
      instance(COMPONENT_KINDS.NATS_PUBLISHER, PUBLISHER, { servers: server.url, subject: 'relayed.{n}', ...publisherOptions }),
    ],
    [[SUBSCRIBER, PUBLISHER]],
  );
}

describe.skipIf(binary === undefined)('NATS connectors in a workflow of the executor', () => {
  let harness: ExecutorHarness;
  let secrets: SecretsClient;

  beforeAll(async () => {
    harness = await startExecutor();
    secrets = createClient(SecretsClient, `127.0.0.1:${harness.running.port}`, { retry: false });
    await call(secrets, 'createVariable', { key: 'NATS_TOKEN', value: TOKEN, encrypted: true, userUuid: '' });
  }, 120_000);
  afterAll(async () => {
    secrets?.close();
    await harness?.stop();
  });

  it('relays a stream to core subjects with the token sealed at push; a restarted workflow takes up after what it acknowledged', async () => {
    const name = 'Order relay_5f6a7b8c-9d0e-4f1a-8b2c-3d4e5f6a7b8c';
    const token = { token: '$$NATS_TOKEN' };
    await call(harness.store, 'putWorkflow', { workflow: workflowToProto(relayWorkflow(name, token, token)) });
    // every stored file, the kept versions under .history too
    const stored = readdirSync(harness.workflowsDir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'));
    expect(stored.join('\n')).not.toContain(TOKEN);
    const file = stored.find((content) => content.includes(SUBSCRIBER)) ?? '{}';
    const tokens = (JSON.parse(file) as { components: { options: { name: string; value: unknown }[] }[] }).components.map(
      (component) => component.options.find((option) => option.name === 'token')?.value,
    );
    expect(tokens).toEqual([expect.stringMatching(/^###AES-/), expect.stringMatching(/^###AES-/)]);
    const relayed = await listen('relayed.>');
    const js = admin.jetstream();

    await call(harness.executor, 'startWorkflow', { name });
    for (const n of [1, 2]) await js.publish('orders.relay', json({ n }), { msgID: `relay-${n}` });
    await expect.poll(() => relayed.length, { timeout: 10_000 }).toBe(2);
    await expect.poll(() => backlog('ORDERS', 'relay')).toEqual({ pending: 0, unacknowledged: 0 });
    await call(harness.executor, 'stopWorkflow', { name });
    await call(harness.executor, 'startWorkflow', { name });
    await js.publish('orders.relay', json({ n: 3 }), { msgID: 'relay-3' });
    await expect.poll(() => relayed.length, { timeout: 10_000 }).toBe(3);
    expect(relayed.map((each) => [each.subject, bodyOf(each)])).toEqual([
      ['relayed.1', { n: 1 }],
      ['relayed.2', { n: 2 }],
      ['relayed.3', { n: 3 }],
    ]);
    await call(harness.executor, 'stopWorkflow', { name });
    expect((await call(harness.executor, 'getWorkflowStatus', { name })).state).not.toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
    expect(harness.logLines.join('\n')).not.toContain(TOKEN);
  });

  it('refuses bad options at push, naming each field, and stores nothing', async () => {
    const name = 'Bad relay_6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d';
    const refused = await failure(
      call(harness.store, 'putWorkflow', {
        workflow: workflowToProto(relayWorkflow(name, { token: 'in-clear', queue_group: 'loom', deliver_policy: 'oldest' }, { subject: 'relayed.>' })),
      }),
    );
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(refused).map((violation) => [violation.field, violation.description])).toEqual([
      ['components[0].options[6].value', "option 'deliver_policy' must be one of: all, new, last, last_per_subject"],
      ['components[0].options[4].value', "option 'token' must be a $$VARIABLE naming the variable that holds it, not the secret itself"],
      ['components[0].options[5].value', "option 'queue_group' is for a core subject: a stream's durable consumer is shared already"],
      ['components[1].options[1].value', "option 'subject' must be a NATS subject without wildcards: dot-separated tokens, each may hold {field} placeholders"],
    ]);
    expect(refused.details).not.toContain('in-clear');
    expect(readdirSync(harness.workflowsDir).some((entry) => entry.startsWith('Bad relay'))).toBe(false);
  });
});
