import { type ServiceError, status } from '@grpc/grpc-js';
import { type WatchRunResponse, WorkflowState } from '@loom/contracts';
import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { SlowConsumerError } from '@loom/foundation';
import { call } from '@loom/service-kit';
import { REDACTED, redactor } from '@loom/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PENDING_RUN_EVENTS } from '../src/executor.service.js';
import { type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

let harness: ExecutorHarness;
beforeAll(async () => {
  harness = await startExecutor();
});
afterAll(async () => {
  await harness.stop();
});

const INLET = 'In_1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
const FAILING = 'Always fails_2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a';

describe('WatchRun', () => {
  it("sends a component's error typed: kind, retryable flag and cause, with the secrets the executor knows redacted", async () => {
    // as a start registers the values it decrypted (openSecretSlots) with the process's redactor
    const secret = 'tok-6f1d0c2b9a8e';
    redactor.add(secret);
    const script = 'Checks token_4f5a6b7c-8d9e-4f0a-9b1c-2d3e4f5a6b7c';
    const workflow = workflowOf(
      'Typed failures_5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d',
      [
        instance(COMPONENT_KINDS.INLET, INLET),
        instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, script, { script: 'throw new RangeError(`token ${body.token} is not valid`);', language: 'javascript' }),
      ],
      [[INLET, script]],
    );
    const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
    const name = put.summary?.name ?? '';
    await call(harness.executor, 'startWorkflow', { name });
    const stream = harness.executor.watchRun({ name });
    const received: WatchRunResponse[] = [];
    stream.on('data', (event: WatchRunResponse) => received.push(event));
    const ended = new Promise((resolve, reject) => stream.on('end', resolve).on('error', reject));
    await expect.poll(() => received.length).toBeGreaterThan(0);

    await call(harness.executor, 'publishMessage', { workflowName: name, inlet: INLET, body: { token: secret }, headers: {}, messageId: 'bad-token' });
    await expect.poll(() => received.filter((event) => event.component === script).length, { timeout: 30_000 }).toBe(1);
    const message = `RangeError: token ${REDACTED} is not valid`;
    expect(received.find((event) => event.component === script)).toMatchObject({
      error: message,
      failure: { kind: 'invalid-argument', retryable: false, message, cause: `ScriptError: ${message}` },
    });
    // the status's last error of the component says the same, redacted alike
    const status = await call(harness.executor, 'getWorkflowStatus', { name });
    expect(status.components.find((component) => component.name === script)?.lastError).toContain(`token ${REDACTED} is not valid`);
    expect(JSON.stringify(status)).not.toContain(secret);
    await call(harness.executor, 'stopWorkflow', { name });
    await ended;
    // state changes report no failure: the run was stopped, no component failed it
    expect(received.filter((event) => event.component === '').map((event) => [event.state, event.failure])).toEqual([
      [WorkflowState.WORKFLOW_STATE_RUNNING, undefined],
      [WorkflowState.WORKFLOW_STATE_STOPPING, undefined],
      [WorkflowState.WORKFLOW_STATE_STOPPED, undefined],
    ]);
  }, 60_000);

  it('ends a watcher that stops reading with RESOURCE_EXHAUSTED once it is too far behind, instead of queueing every event', async () => {
    // every message fails, and every failure is a run event with its (long) error
    const workflow = workflowOf(
      'Watched_3e4f5a6b-7c8d-4e9f-8a1b-2c3d4e5f6a7b',
      [
        instance(COMPONENT_KINDS.INLET, INLET),
        instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, FAILING, { script: `throw new Error('${'x'.repeat(500)}');`, language: 'javascript' }),
      ],
      [[INLET, FAILING]],
    );
    const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
    const name = put.summary?.name ?? '';
    await call(harness.executor, 'startWorkflow', { name });

    const stream = harness.executor.watchRun({ name });
    const received: WatchRunResponse[] = [];
    const first = new Promise<void>((resolve) => stream.once('data', () => resolve()));
    const ended = new Promise<ServiceError | 'too many'>((resolve) => {
      stream.on('data', (event: WatchRunResponse) => {
        received.push(event);
        if (received.length > total) resolve('too many');
      });
      stream.on('error', (error: ServiceError) => resolve(error));
    });
    const total = 3 * MAX_PENDING_RUN_EVENTS;
    await first;
    // a client that stops reading: grpc-js stops asking for messages, HTTP/2 flow control stops the server's sends
    stream.pause();
    for (let batch = 0; batch < total / 1000; batch++) {
      const messages = Array.from({ length: 1000 }, (_, index) => ({ body: { n: batch * 1000 + index }, headers: {}, messageId: `m-${batch}-${index}` }));
      await call(harness.executor, 'publishMessages', { workflowName: name, inlet: INLET, messages });
    }
    await expect
      .poll(
        async () => (await call(harness.executor, 'getWorkflowStatus', { name })).components.find((component) => component.name === FAILING)?.messagesFailed,
        { timeout: 60_000 },
      )
      .toBe(total);
    stream.resume();
    const end = await ended;
    stream.cancel();
    expect(end === 'too many' ? end : { code: end.code, details: end.details }).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      details: new SlowConsumerError(MAX_PENDING_RUN_EVENTS).message,
    });
    expect(received.length).toBeLessThan(total);
    await call(harness.executor, 'stopWorkflow', { name });
  }, 120_000);
});
