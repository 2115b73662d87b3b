import { status } from '@grpc/grpc-js';
import { WorkflowStoreService } from '@loom/contracts';
import { probeEveryRpc, serveForTest } from '@loom/service-kit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { configStoreModule } from '../src/index.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('configStore service', () => {
  it('serves every RPC of its contract, each answering UNIMPLEMENTED with the capability still to come', async () => {
    const running = await serveForTest([configStoreModule]);
    cleanups.push(() => running.stop());
    const outcomes = await probeEveryRpc(WorkflowStoreService, `127.0.0.1:${running.port}`);
    expect(Object.keys(outcomes)).toHaveLength(Object.keys(WorkflowStoreService).length);
    for (const [path, outcome] of Object.entries(outcomes)) {
      expect(outcome.code, path).toBe(status.UNIMPLEMENTED);
      expect(outcome.details, path).toMatch(new RegExp(`^not implemented yet: ${path.slice(1)} \\(.+\\)$`));
    }
    expect(outcomes['/loom.v1.WorkflowStore/PutWorkflow']?.details).toContain('durable workflow storage on disk');
  });
});
