import { type ServiceError, status } from '@grpc/grpc-js';
import { SecretsClient, SecretsService } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { probeEveryRpc, serveForTest } from '@loom/service-kit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { secretsModule } from '../src/index.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('secrets service', () => {
  it('serves every RPC of its contract, each answering UNIMPLEMENTED with the capability still to come', async () => {
    const running = await serveForTest([secretsModule]);
    cleanups.push(() => running.stop());
    const outcomes = await probeEveryRpc(SecretsService, `127.0.0.1:${running.port}`);
    expect(Object.keys(outcomes)).toHaveLength(Object.keys(SecretsService).length);
    // DecryptResources refuses anonymous callers before any handler runs.
    expect(outcomes['/loom.v1.Secrets/DecryptResources']?.code).toBe(status.UNAUTHENTICATED);
    delete outcomes['/loom.v1.Secrets/DecryptResources'];
    for (const [path, outcome] of Object.entries(outcomes)) {
      expect(outcome.code, path).toBe(status.UNIMPLEMENTED);
      expect(outcome.details, path).toMatch(new RegExp(`^not implemented yet: ${path.slice(1)} \\(.+\\)$`));
    }
    expect(outcomes['/loom.v1.Secrets/CreateVariable']?.details).toContain('ecosystem variables');
  });

  it('lets only the executor identity reach DecryptResources', async () => {
    const running = await serveForTest([secretsModule], ['loom.auth.tokens.executor=executor-token-0123456789', 'loom.auth.tokens.operator=operator-token-0123456789']);
    cleanups.push(() => running.stop());
    const address = `127.0.0.1:${running.port}`;
    const asIdentity = async (token?: string): Promise<number> => {
      const client = createClient(SecretsClient, address, { retry: false, ...(token === undefined ? {} : { token }) });
      try {
        await call(client, 'decryptResources', {});
        return status.OK;
      } catch (error) {
        return (error as ServiceError).code;
      } finally {
        client.close();
      }
    };
    expect(await asIdentity()).toBe(status.UNAUTHENTICATED);
    expect(await asIdentity('operator-token-0123456789')).toBe(status.PERMISSION_DENIED);
    // The executor gets through authentication to the handler, which is not built yet.
    expect(await asIdentity('executor-token-0123456789')).toBe(status.UNIMPLEMENTED);
  });
});
