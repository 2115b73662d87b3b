import { credentials, ServerCredentials, status, type ServiceError } from '@grpc/grpc-js';
import { SecretsClient, SecretsService } from '@loom/contracts';
import { testCertificates, type TestCertificates } from '@loom/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator, call, createClient, LoomServer, unimplemented } from '../src/index.js';
import { capturedLogger } from '../src/testing.js';

const NO_SLOTS = { workflow: undefined, slots: [], workflowName: '' };

let certificates: TestCertificates;
const read = (file: string): Buffer => certificates.read(file);

beforeAll(() => {
  certificates = testCertificates([{ name: 'localhost', altNames: 'DNS:localhost,IP:127.0.0.1' }, { name: 'executor' }, { name: 'config-store' }]);
});
afterAll(() => certificates.remove());

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('mTLS identity', () => {
  it('takes the client certificate common name as the caller identity', async () => {
    const server = new LoomServer({
      logger: capturedLogger().logger,
      authenticator: new Authenticator({ tokens: {}, allowAnonymous: false, clientCertificates: true }),
      credentials: ServerCredentials.createSsl(read('ca.crt'), [{ cert_chain: read('localhost.crt'), private_key: read('localhost.key') }], true),
    });
    let seen: string | undefined;
    server.addService(
      'loom.v1.Secrets',
      SecretsService,
      {
        ...unimplemented(SecretsService, {} as never),
        decryptResources: (_request, context) => {
          seen = context.identity;
          return Promise.resolve({ workflow: undefined, slots: [] });
        },
      },
      { restrict: { decryptResources: ['executor'] } },
    );
    const port = await server.listen('127.0.0.1', 0);
    cleanups.push(() => server.shutdown(1000));

    const clientFor = (name: string): SecretsClient => {
      const client = createClient(SecretsClient, `127.0.0.1:${port}`, {
        credentials: credentials.createSsl(read('ca.crt'), read(`${name}.key`), read(`${name}.crt`)),
        retry: false,
        channelOptions: { 'grpc.ssl_target_name_override': 'localhost' },
      });
      cleanups.push(() => client.close());
      return client;
    };

    await call(clientFor('executor'), 'decryptResources', NO_SLOTS);
    expect(seen).toBe('executor');

    const denied = await call(clientFor('config-store'), 'decryptResources', NO_SLOTS).catch((error: ServiceError) => error);
    expect((denied as ServiceError).code).toBe(status.PERMISSION_DENIED);

    const withoutCertificate = createClient(SecretsClient, `127.0.0.1:${port}`, {
      credentials: credentials.createSsl(read('ca.crt')),
      retry: false,
      deadlineMs: 3000,
      channelOptions: { 'grpc.ssl_target_name_override': 'localhost' },
    });
    cleanups.push(() => withoutCertificate.close());
    const refused = await call(withoutCertificate, 'decryptResources', NO_SLOTS).catch((error: ServiceError) => error);
    expect((refused as ServiceError).code).toBe(status.UNAVAILABLE);
  });
});
