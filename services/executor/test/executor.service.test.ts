import { status } from '@grpc/grpc-js';
import { ExecutorService } from '@loom/contracts';
import { probeEveryRpc, serveForTest } from '@loom/service-kit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { executorModule } from '../src/index.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('executor service', () => {
  it('serves every RPC of its contract, each answering UNIMPLEMENTED with the capability still to come', async () => {
    const running = await serveForTest([executorModule]);
    cleanups.push(() => running.stop());
    const outcomes = await probeEveryRpc(ExecutorService, `127.0.0.1:${running.port}`);
    expect(Object.keys(outcomes)).toHaveLength(Object.keys(ExecutorService).length);
    for (const [path, outcome] of Object.entries(outcomes)) {
      expect(outcome.code, path).toBe(status.UNIMPLEMENTED);
      expect(outcome.details, path).toMatch(new RegExp(`^not implemented yet: ${path.slice(1)} \\(.+\\)$`));
    }
    expect(outcomes['/loom.v1.Executor/StartWorkflow']?.details).toContain('the workflow runtime');
  });
});
