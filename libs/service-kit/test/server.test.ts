import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { SecretsClient, SecretsService, type ListVariablesResponse } from '@loom/contracts';
import { ValidationError } from '@loom/domain';
import { withResolvers } from '@loom/foundation';
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { Authenticator, call, type CallContext, createClient, fieldViolationsOf, LoomServer, unimplemented } from '../src/index.js';
import { capturedLogger } from '../src/testing.js';

const NO_SLOTS = { workflow: undefined, slots: [], workflowName: '' };

const executorToken = 'executor-token-0123456789';
const storeToken = 'config-store-token-0123456789';
const aliceToken = 'alice-token-0123456789';

type Secrets = ReturnType<typeof unimplemented<typeof SecretsService>>;

interface Harness {
  server: LoomServer;
  address: string;
  lines: string[];
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(overrides: Partial<Secrets>, options: { allowAnonymous?: boolean } = {}): Promise<Harness> {
  const { logger, lines } = capturedLogger();
  const server = new LoomServer({
    logger,
    authenticator: new Authenticator({
      tokens: { executor: executorToken, 'config-store': storeToken, alice: aliceToken },
      roles: { alice: ['editor'] },
      allowAnonymous: options.allowAnonymous ?? true,
      clientCertificates: false,
    }),
  });
  const implementation = { ...unimplemented(SecretsService, {} as Record<keyof typeof SecretsService, string>), ...overrides };
  server.addService('loom.v1.Secrets', SecretsService, implementation, { restrict: { decryptResources: ['executor'] } });
  const port = await server.listen('127.0.0.1', 0);
  cleanups.push(() => server.shutdown(1000));
  return { server, address: `127.0.0.1:${port}`, lines };
}

function client(address: string, token?: string, retry = true): SecretsClient {
  const created = createClient(SecretsClient, address, {
    ...(token === undefined ? {} : { token }),
    ...(retry ? { retry: { maxAttempts: 4, initialBackoffMs: 10, maxBackoffMs: 50, backoffMultiplier: 2 } } : { retry: false }),
  });
  cleanups.push(() => created.close());
  return created;
}

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    return error as ServiceError;
  }
  throw new Error('expected the call to fail');
}

const emptyList: ListVariablesResponse = { variables: [], nextPageToken: '' };

describe('error mapping', () => {
  it('sends a validation error as INVALID_ARGUMENT with google.rpc.BadRequest field violations', async () => {
    const { address } = await serve({
      createVariable: () => Promise.reject(ValidationError.of('key', 'must match [A-Za-z_][A-Za-z0-9_]*', 'PATTERN')),
    });
    const error = await failure(call(client(address), 'createVariable', { key: '1x', value: 'v', encrypted: false, userUuid: '' }));
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    expect(error.details).toBe('key: must match [A-Za-z_][A-Za-z0-9_]*');
    expect(fieldViolationsOf(error)).toEqual([{ field: 'key', description: 'must match [A-Za-z_][A-Za-z0-9_]*', reason: 'PATTERN' }]);
  });

  it('maps an error a handler throws before returning its promise like a rejection', async () => {
    const { address } = await serve({
      createVariable: () => {
        throw ValidationError.of('value', 'is too long', 'TOO_LONG');
      },
    });
    const error = await failure(call(client(address), 'createVariable', { key: 'K', value: 'v', encrypted: false, userUuid: '' }));
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    expect(error.details).toBe('value: is too long');
  });

  it('hides unmapped errors behind INTERNAL with a reference that the log carries', async () => {
    const { address, lines } = await serve({
      getVariable: () => Promise.reject(new TypeError('connection to postgres://admin:hunter2@db failed')),
    });
    const error = await failure(call(client(address), 'getVariable', { key: 'x' }));
    expect(error.code).toBe(status.INTERNAL);
    expect(error.details).toMatch(/^internal error \(reference [0-9a-f-]{36}\)$/);
    expect(error.details).not.toContain('hunter2');
    const reference = /reference ([0-9a-f-]{36})/.exec(error.details)?.[1];
    expect(lines.some((line) => line.includes(reference!) && line.includes('unhandled error'))).toBe(true);
  });

  it('answers UNIMPLEMENTED naming the missing capability', async () => {
    const server = new LoomServer({
      logger: capturedLogger().logger,
      authenticator: new Authenticator({ tokens: {}, allowAnonymous: true, clientCertificates: false }),
    });
    server.addService('loom.v1.Secrets', SecretsService, unimplemented(SecretsService, { rotateKey: 'key rotation' } as never));
    const port = await server.listen('127.0.0.1', 0);
    cleanups.push(() => server.shutdown(1000));
    const error = await failure(call(client(`127.0.0.1:${port}`), 'rotateKey', { keyId: '' }));
    expect(error.code).toBe(status.UNIMPLEMENTED);
    expect(error.details).toBe('not implemented yet: loom.v1.Secrets/RotateKey (key rotation)');
  });
});

describe('shutdown', () => {
  it('is once: a second shutdown waits for the first and resolves only after the server stopped', async () => {
    const { promise: held, resolve: release } = withResolvers();
    const { promise: entered, resolve: enter } = withResolvers();
    const { server, address } = await serve({
      listVariables: async () => {
        enter();
        await held;
        return emptyList;
      },
    });
    const inFlight = call(client(address, undefined, false), 'listVariables', { pageSize: 0, pageToken: '' });
    await entered;
    const first = server.shutdown(5000);
    expect(server.state).toBe('stopping');
    const second = server.shutdown(5000).then(() => server.state);
    release();
    await expect(inFlight).resolves.toEqual(emptyList);
    expect(await second).toBe('stopped');
    await first;
    await expect(server.shutdown(5000)).resolves.toBeUndefined();
  });

  it('runs on the shared Lifecycle: services cannot be added once it stopped', async () => {
    const { server } = await serve({});
    await server.shutdown(1000);
    expect(server.state).toBe('stopped');
    expect(() => server.addService('loom.v1.Secrets', SecretsService, unimplemented(SecretsService, {} as never))).toThrow(
      'services must be added before the server listens',
    );
  });
});

describe('service identity', () => {
  it('lets only the executor call DecryptResources', async () => {
    let seen: CallContext | undefined;
    const { address } = await serve({
      decryptResources: (request, context) => {
        seen = context;
        return Promise.resolve({ workflow: undefined, slots: request.slots });
      },
    });
    const anonymous = await failure(call(client(address), 'decryptResources', NO_SLOTS));
    expect(anonymous.code).toBe(status.UNAUTHENTICATED);

    const store = await failure(call(client(address, storeToken), 'decryptResources', NO_SLOTS));
    expect(store.code).toBe(status.PERMISSION_DENIED);
    expect(store.details).toContain("identity 'config-store' lacks the permission 'decrypt' that /loom.v1.Secrets/DecryptResources needs");

    const forged = await failure(call(client(address, 'not-a-token-at-all-000'), 'decryptResources', NO_SLOTS));
    expect(forged.code).toBe(status.UNAUTHENTICATED);

    await call(client(address, executorToken), 'decryptResources', NO_SLOTS);
    expect(seen?.identity).toBe('executor');
    expect(seen?.metadata.get('authorization')).toEqual([]);
  });

  it('ignores an identity the client claims in metadata', async () => {
    let seen: string | undefined = 'unset';
    const { address } = await serve({
      listVariables: (_request, context) => {
        seen = context.identity;
        return Promise.resolve(emptyList);
      },
    });
    const metadata = new Metadata();
    metadata.set('x-loom-verified-identity', 'executor');
    await call(client(address), 'listVariables', { pageSize: 0, pageToken: '' }, { metadata });
    expect(seen).toBeUndefined();
    const spoofed = await failure(call(client(address), 'decryptResources', NO_SLOTS, { metadata }));
    expect(spoofed.code).toBe(status.UNAUTHENTICATED);
  });

  it('refuses anonymous calls to any RPC when anonymous access is off', async () => {
    const { address } = await serve({ listVariables: () => Promise.resolve(emptyList) }, { allowAnonymous: false });
    const anonymous = await failure(call(client(address), 'listVariables', { pageSize: 0, pageToken: '' }));
    expect(anonymous.code).toBe(status.UNAUTHENTICATED);
    await expect(call(client(address, aliceToken), 'listVariables', { pageSize: 0, pageToken: '' })).resolves.toEqual(emptyList);
  });
});

describe('client', () => {
  it('retries UNAVAILABLE with backoff and succeeds', async () => {
    let attempts = 0;
    const { address } = await serve({
      listVariables: () => {
        attempts += 1;
        if (attempts < 3)
          return Promise.reject(Object.assign(new Error('draining'), { code: status.UNAVAILABLE, details: 'draining', metadata: new Metadata() }));
        return Promise.resolve(emptyList);
      },
    });
    await expect(call(client(address), 'listVariables', { pageSize: 0, pageToken: '' })).resolves.toEqual(emptyList);
    expect(attempts).toBe(3);
  });

  it('does not retry other codes', async () => {
    let attempts = 0;
    const { address } = await serve({
      createVariable: () => {
        attempts += 1;
        return Promise.reject(ValidationError.of('value', 'too long'));
      },
    });
    await failure(call(client(address), 'createVariable', { key: 'k', value: 'v', encrypted: false, userUuid: '' }));
    expect(attempts).toBe(1);
  });

  it('applies the deadline and the handler sees the cancellation', async () => {
    let cancelled = false;
    const { address } = await serve({
      rotateKey: (_request, context) =>
        new Promise((resolve) =>
          context.signal.addEventListener('abort', () => {
            cancelled = true;
            resolve({ activeKeyId: '', variablesReencrypted: 0, workflowsReencrypted: 0, workflowsLeft: [] });
          }),
        ),
    });
    const secrets = createClient(SecretsClient, address, { deadlineMs: 200 });
    cleanups.push(() => secrets.close());
    const error = await failure(call(secrets, 'rotateKey', { keyId: '' }));
    expect(error.code).toBe(status.DEADLINE_EXCEEDED);
    await expect.poll(() => cancelled).toBe(true);
  });

  it('leaves no listener on a long-lived signal once its calls are done, and cancels a call whose signal aborts', async () => {
    let release: () => void = () => undefined;
    const { address } = await serve({
      listVariables: () => Promise.resolve(emptyList),
      rotateKey: () =>
        new Promise((resolve) => (release = () => resolve({ activeKeyId: '', variablesReencrypted: 0, workflowsReencrypted: 0, workflowsLeft: [] }))),
    });
    const secrets = client(address, undefined, false);
    const run = new AbortController();
    for (let i = 0; i < 20; i++) await call(secrets, 'listVariables', { pageSize: 0, pageToken: '' }, { signal: run.signal });
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);

    const pending = failure(call(secrets, 'rotateKey', { keyId: '' }, { signal: run.signal }));
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(1);
    run.abort();
    expect((await pending).code).toBe(status.CANCELLED);
    release();
    const refused = await failure(call(secrets, 'listVariables', { pageSize: 0, pageToken: '' }, { signal: run.signal }));
    expect(refused.code).toBe(status.CANCELLED);
  });

  it('reaches nothing on a closed port: UNAVAILABLE after the retries', async () => {
    const secrets = createClient(SecretsClient, '127.0.0.1:1', {
      retry: { maxAttempts: 2, initialBackoffMs: 10, maxBackoffMs: 10, backoffMultiplier: 1 },
      credentials: credentials.createInsecure(),
    });
    cleanups.push(() => secrets.close());
    const error = await failure(call(secrets, 'getVariable', { key: 'x' }));
    expect(error.code).toBe(status.UNAVAILABLE);
  });
});
