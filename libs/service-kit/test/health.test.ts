import { credentials, makeGenericClientConstructor, Metadata, type ClientReadableStream, type ServiceError, status, type StatusObject } from '@grpc/grpc-js';
import { SecretsService } from '@loom/contracts';
import { SlowConsumerError, withResolvers } from '@loom/foundation';
import { afterEach, describe, expect, it } from 'vitest';
import { Authenticator, HEALTH_WATCH_CAPACITY, healthDefinition, HealthService, LoomServer, toStatusObject, unimplemented } from '../src/index.js';
import { capturedLogger } from '../src/testing.js';

interface HealthClient {
  Check(request: { service: string }, callback: (error: ServiceError | null, response?: { status: string }) => void): void;
  Watch(request: { service: string }, metadata: Metadata): ClientReadableStream<{ status: string }>;
  close(): void;
}
const HealthClientConstructor = makeGenericClientConstructor(healthDefinition, 'Health') as unknown as new (
  address: string,
  creds: ReturnType<typeof credentials.createInsecure>,
) => HealthClient;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(): Promise<{ server: LoomServer; health: HealthClient }> {
  const server = new LoomServer({
    logger: capturedLogger().logger,
    authenticator: new Authenticator({ tokens: {}, allowAnonymous: false, clientCertificates: false }),
  });
  server.addService('loom.v1.Secrets', SecretsService, unimplemented(SecretsService, {} as never));
  const port = await server.listen('127.0.0.1', 0);
  cleanups.push(() => server.shutdown(1000));
  const health = new HealthClientConstructor(`127.0.0.1:${port}`, credentials.createInsecure());
  cleanups.push(() => health.close());
  return { server, health };
}

function check(health: HealthClient, service: string): Promise<string> {
  return new Promise((resolve, reject) => health.Check({ service }, (error, response) => (error ? reject(error) : resolve(response?.status ?? ''))));
}

describe('health', () => {
  it('reports SERVING per service name, without credentials', async () => {
    const { health } = await startServer();
    await expect(check(health, '')).resolves.toBe('SERVING');
    await expect(check(health, 'loom.v1.Secrets')).resolves.toBe('SERVING');
    await expect(check(health, 'loom.v1.Audit')).rejects.toMatchObject({ code: 5 });
  });

  it('ends Watch streams cleanly on shutdown, after telling them NOT_SERVING', async () => {
    const { server, health } = await startServer();
    const stream = health.Watch({ service: 'loom.v1.Secrets' }, new Metadata());
    const statuses: string[] = [];
    const ended = new Promise<StatusObject>((resolve) => stream.on('status', resolve));
    stream.on('data', (message: { status: string }) => statuses.push(message.status));
    await expect.poll(() => statuses).toEqual(['SERVING']);

    await server.shutdown(5000);
    const final = await ended;
    // drained, not forced at the deadline: a forced stream would end CANCELLED, not OK
    expect(final.code).toBe(0);
    expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);
    expect(server.state).toBe('stopped');
  });

  it('ends a Watch that fell more than HEALTH_WATCH_CAPACITY changes behind with RESOURCE_EXHAUSTED', async () => {
    const health = new HealthService();
    health.setStatus('loom.v1.Secrets', 'SERVING');
    const sent: string[] = [];
    const { promise: transportFull, resolve: release } = withResolvers();
    // a client that stopped reading: the first send never completes until released
    const send = async (response: { status: string }): Promise<void> => {
      sent.push(response.status);
      await transportFull;
    };
    const context = { identity: undefined, metadata: new Metadata(), signal: new AbortController().signal };
    const watching = health.handlers().Watch({ service: 'loom.v1.Secrets' }, send, context);
    await expect.poll(() => sent).toEqual(['SERVING']);
    for (let change = 0; change <= HEALTH_WATCH_CAPACITY; change++) health.setStatus('loom.v1.Secrets', change % 2 === 0 ? 'NOT_SERVING' : 'SERVING');
    release();
    const error: unknown = await watching.catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SlowConsumerError);
    expect(sent).toEqual(['SERVING']);
    expect(toStatusObject(error, { error: () => undefined })).toMatchObject({
      code: status.RESOURCE_EXHAUSTED,
      details: `the watcher fell more than ${HEALTH_WATCH_CAPACITY} events behind and its stream was ended; watch again to resume`,
    });
  });
});
