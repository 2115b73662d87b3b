import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata } from '@grpc/grpc-js';
import { WorkflowEventType, type WatchWorkflowsResponse } from '@loom/contracts';
import { serializeWorkflowJson } from '@loom/domain';
import { SlowConsumerError, withResolvers } from '@loom/foundation';
import { capturedLogger } from '@loom/service-kit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { configStoreImplementation } from '../src/config-store.service.js';
import { WorkflowRepository } from '../src/workflow-repository.js';
import { graphWorkflow } from './harness.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe('WatchWorkflows', () => {
  it('ends a watcher more than its capacity of changes behind with SlowConsumerError (RESOURCE_EXHAUSTED)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'loom-watch-workflows-'));
    roots.push(root);
    const { logger } = capturedLogger();
    const repository = await WorkflowRepository.open({ root, startupDirectory: root, logger });
    const unused = (): never => {
      throw new Error('WatchWorkflows calls no other service');
    };
    const implementation = configStoreImplementation({ repository, secrets: unused, audit: unused, logger, watchCapacity: 2 });

    const sent: WatchWorkflowsResponse[] = [];
    const { promise: transportFull, resolve: release } = withResolvers();
    // a client that stopped reading: the first send (SNAPSHOT_COMPLETE of the empty store) completes only when released
    const send = async (response: WatchWorkflowsResponse): Promise<void> => {
      sent.push(response);
      await transportFull;
    };
    const context = { identity: undefined, metadata: new Metadata(), signal: new AbortController().signal };
    const watching = implementation.watchWorkflows({}, send, context);
    await expect.poll(() => sent.map((event) => event.type)).toEqual([WorkflowEventType.WORKFLOW_EVENT_TYPE_SNAPSHOT_COMPLETE]);

    // three changes for a watcher that holds two
    for (const name of ['First', 'Second', 'Third']) {
      const workflow = graphWorkflow(name, 'unsealed');
      await repository.put(repository.storedNameFor(name), workflow, serializeWorkflowJson(workflow), { expectedVersion: 0, pushedBy: 'test' });
    }
    release();
    const error: unknown = await watching.catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SlowConsumerError);
    expect(error).toMatchObject({ kind: 'resource-exhausted', message: expect.stringContaining('more than 2 events behind') });
    expect(sent).toHaveLength(1);
  });
});
