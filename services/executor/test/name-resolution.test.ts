import { type ServiceError, status } from '@grpc/grpc-js';
import { WorkflowState } from '@loom/contracts';
import { parseStoredName } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExecutorHarness, pipelineWorkflow, startExecutor } from './harness.js';

let harness: ExecutorHarness;
beforeAll(async () => {
  harness = await startExecutor();
});
afterAll(async () => {
  await harness.stop();
});

const failure = (promise: Promise<unknown>): Promise<ServiceError> =>
  promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error as ServiceError,
  );

describe('workflow names on the executor', () => {
  it("take a bare name as that workflow's only: 'etl' does not stop etl_nightly_<uuid>", async () => {
    const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(pipelineWorkflow('etl_nightly')) });
    const nightly = put.summary?.name ?? '';
    expect(parseStoredName(nightly)?.base).toBe('etl_nightly');
    await call(harness.executor, 'startWorkflow', { name: nightly });

    const stop = await failure(call(harness.executor, 'stopWorkflow', { name: 'etl' }));
    expect(stop.code).toBe(status.NOT_FOUND);
    expect((await failure(call(harness.executor, 'getWorkflowStatus', { name: 'etl' }))).code).toBe(status.NOT_FOUND);
    expect((await call(harness.executor, 'getWorkflowStatus', { name: nightly })).state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);

    // its own workflow name and its stored name still find it
    expect((await call(harness.executor, 'getWorkflowStatus', { name: 'etl_nightly' })).state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
    await call(harness.executor, 'stopWorkflow', { name: 'etl_nightly' });
    expect((await call(harness.executor, 'getWorkflowStatus', { name: nightly })).state).toBe(WorkflowState.WORKFLOW_STATE_STOPPED);
  });
});
