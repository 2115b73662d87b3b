import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Metadata, Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData, type ServiceError } from '@grpc/grpc-js';
import { type DecryptResourcesRequest, type SealConfigurationRequest, SecretsClient, SecretsService } from '@loom/contracts';
import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, createClient } from '@loom/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { componentNames } from './component-names.js';
import { type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

const SCRIPT_MARKER = 'script-text-that-must-never-reach-secrets-4b1e';
const TOKEN = 'Bearer slot-contract-secret-2f9a';
const { INLET, SCRIPT, ENRICHER, SINK } = componentNames('Slots', { INLET: 'In', SCRIPT: 'Shape', ENRICHER: 'Call', SINK: 'Log' });

/**
 * A loom.v1.Secrets in front of the real one that records what SealConfiguration and DecryptResources are sent and
 * forwards each call with its caller's credentials.
 */
async function recordingSecretsProxy(
  target: () => string,
): Promise<{ port: number; seals: SealConfigurationRequest[]; decrypts: DecryptResourcesRequest[]; stop(): Promise<void> }> {
  const seals: SealConfigurationRequest[] = [];
  const decrypts: DecryptResourcesRequest[] = [];
  let client: SecretsClient | undefined;
  const forward =
    <Q, R>(record: Q[], method: 'sealConfiguration' | 'decryptResources') =>
    (request: ServerUnaryCall<Q, R>, callback: sendUnaryData<R>): void => {
      record.push(request.request);
      client ??= createClient(SecretsClient, target(), { retry: false });
      const metadata = new Metadata();
      const authorization = request.metadata.get('authorization')[0];
      if (authorization !== undefined) metadata.set('authorization', authorization);
      call(client, method, request.request as never, { metadata }).then(
        (answer) => callback(null, answer as R),
        (error: ServiceError) => callback(error),
      );
    };
  const server = new Server();
  server.addService(SecretsService, {
    sealConfiguration: forward(seals, 'sealConfiguration'),
    decryptResources: forward(decrypts, 'decryptResources'),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error === null ? resolve(bound) : reject(error))),
  );
  return {
    port,
    seals,
    decrypts,
    async stop() {
      client?.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    },
  };
}

describe('one secret-slot contract between the config store, the executor and the secrets service', () => {
  let harness: ExecutorHarness;
  let proxy: Awaited<ReturnType<typeof recordingSecretsProxy>>;
  let echo: HttpServer;
  const seen: string[] = [];

  beforeAll(async () => {
    proxy = await recordingSecretsProxy(() => `127.0.0.1:${harness.running.port}`);
    harness = await startExecutor([`loom.services.secrets.address=127.0.0.1:${proxy.port}`]);
    echo = createHttpServer((request, response) => {
      seen.push(request.headers.authorization ?? '');
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await harness.stop();
    await proxy.stop();
    echo.closeAllConnections();
    await new Promise((resolve) => echo.close(resolve));
  });

  it('sends the secrets service the secret slots only, never a script or another option, and starts with the opened values', async () => {
    const secrets = createClient(SecretsClient, `127.0.0.1:${harness.running.port}`, { retry: false });
    try {
      await call(secrets, 'createVariable', { key: 'CALL_TOKEN', value: TOKEN, encrypted: true, userUuid: '' });
    } finally {
      secrets.close();
    }
    const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/call`;
    const workflow = workflowOf(
      'Slots_4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d',
      [
        instance(COMPONENT_KINDS.INLET, INLET),
        instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, SCRIPT, { language: 'javascript', script: `// ${SCRIPT_MARKER}\nreturn body;` }),
        instance(COMPONENT_KINDS.HTTP_ENRICHER, ENRICHER, { url, headers: JSON.stringify({ authorization: '$$CALL_TOKEN', accept: 'application/json' }) }),
        instance(COMPONENT_KINDS.LOGGER, SINK),
      ],
      [
        [INLET, SCRIPT],
        [SCRIPT, ENRICHER],
        [ENRICHER, SINK],
      ],
    );
    const { summary } = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow), expectedVersion: undefined });
    const name = summary?.name ?? '';
    await call(harness.executor, 'startWorkflow', { name });
    await call(harness.executor, 'publishMessage', { workflowName: name, inlet: INLET, body: { n: 1 }, headers: {}, messageId: '' });
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(1);
    expect(seen[0]).toBe(TOKEN);
    await call(harness.executor, 'stopWorkflow', { name, drainTimeout: undefined });

    const headerPath = 'components[2].options.headers.authorization';
    expect(proxy.seals).toHaveLength(1);
    expect(proxy.seals[0]?.workflow).toBeUndefined();
    expect(proxy.seals[0]?.slots).toEqual([{ path: headerPath, value: '$$CALL_TOKEN', sensitive: true }]);
    expect(proxy.decrypts).toHaveLength(1);
    expect(proxy.decrypts[0]?.workflow).toBeUndefined();
    expect(proxy.decrypts[0]?.workflowName).toBe(name);
    expect(proxy.decrypts[0]?.slots.map((slot) => slot.path)).toEqual([headerPath]);
    expect(proxy.decrypts[0]?.slots[0]?.value).toMatch(/^###AES-/);
    expect(JSON.stringify([proxy.seals, proxy.decrypts])).not.toContain(SCRIPT_MARKER);
  });
});
