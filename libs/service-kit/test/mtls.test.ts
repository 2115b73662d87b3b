import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, ServerCredentials, status, type ServiceError } from '@grpc/grpc-js';
import { SecretsClient, SecretsService } from '@loom/contracts';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator, call, createClient, LoomServer, unimplemented } from '../src/index.js';
import { capturedLogger } from '../src/testing.js';

const NO_SLOTS = { workflow: undefined, slots: [], workflowName: '' };

let dir: string;
const openssl = (...args: string[]): void => {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
};
const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Issues a certificate signed by the test CA for the given common name. */
function issue(name: string, extensions?: string): void {
  openssl('req', ...ecKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
  const extra = extensions === undefined ? [] : ['-extfile', `${name}.ext`];
  if (extensions !== undefined) writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', ...extra);
}
const read = (file: string): Buffer => readFileSync(join(dir, file));

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'loom-mtls-'));
  openssl('req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=loom test CA', '-days', '1');
  issue('localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  issue('executor');
  issue('config-store');
});

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
