import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata } from '@grpc/grpc-js';
import { type WatchResponse } from '@loom/contracts';
import { SlowConsumerError, withResolvers } from '@loom/foundation';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/audit-log.js';
import { type AuditFacts } from '../src/audit-record.js';
import { auditImplementation } from '../src/audit.service.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function started(workflow: string): AuditFacts {
  return { type: 'WORKFLOW_START', workflow, component: '', componentType: '', reason: '', actor: 'executor', traceId: '', attributes: {} };
}

describe('Watch', () => {
  it('ends a watcher more than its capacity of records behind with SlowConsumerError (RESOURCE_EXHAUSTED)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'loom-audit-watch-'));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const { log } = await AuditLog.open({ path: join(root, 'audit.log'), maxFileBytes: 1 << 20 });
    cleanups.push(() => log.close());
    const implementation = auditImplementation(log, { watchCapacity: 2 });

    const sent: WatchResponse[] = [];
    const { promise: transportFull, resolve: release } = withResolvers();
    // a client that stopped reading: the first send completes only when released
    const send = async (response: WatchResponse): Promise<void> => {
      sent.push(response);
      await transportFull;
    };
    const context = { identity: undefined, metadata: new Metadata(), signal: new AbortController().signal };
    const watching = implementation.watch({ types: [], workflowName: '', fromSequence: 0 }, send, context);
    await log.append(started('first'));
    await expect.poll(() => sent.map((response) => response.event?.workflowName)).toEqual(['first']);

    // three more records for a watcher that holds two
    for (const workflow of ['second', 'third', 'fourth']) await log.append(started(workflow));
    release();
    const error: unknown = await watching.catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SlowConsumerError);
    expect(error).toMatchObject({ kind: 'resource-exhausted', message: expect.stringContaining('more than 2 events behind') });
    expect(sent).toHaveLength(1);
  });
});
