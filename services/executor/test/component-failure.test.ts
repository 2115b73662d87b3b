import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { componentFailureEvents, type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

// A failing script component's error, end to end through the executor service: the failure handler's message and the
// PRIVILEGED_WORKFLOW_COMPONENT_FAILURE audit event both keep its kind, retryable flag and cause, not only its text.

let harness: ExecutorHarness;

beforeAll(async () => {
  harness = await startExecutor();
});

afterAll(async () => {
  await harness.stop();
});

const UUID = '2f6b9c1d-3e4a-4b5c-8d7e-9f0a1b2c3d4e';
const INLET = `In_${UUID}`;
const SCRIPT = `Check_${UUID}`;
const OUT = `Out_${UUID}`;
const FAILURES = `Failures_${UUID}`;

describe('a failing script component', () => {
  it('reaches the failure handler and the audit log with its kind, retryable flag and cause', async () => {
    const workflow = workflowOf(
      `Script failure_${UUID}`,
      [
        instance(COMPONENT_KINDS.INLET, INLET),
        instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, SCRIPT, {
          script: "if (body.n < 0) throw new RangeError('n must not be negative'); return body;",
          language: 'javascript',
          failure_handler: FAILURES,
        }),
        instance(COMPONENT_KINDS.LOGGER, OUT),
        instance(COMPONENT_KINDS.LOGGER, FAILURES, { level: 'warn' }),
      ],
      [
        [INLET, SCRIPT],
        [SCRIPT, OUT],
      ],
    );
    const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
    const name = put.summary?.name ?? '';
    await call(harness.executor, 'startWorkflow', { name });
    await call(harness.executor, 'publishMessage', { workflowName: name, inlet: INLET, body: { n: -1 }, headers: {}, messageId: 'negative' });

    const handled = () => harness.logged().filter((line) => line.component === FAILURES);
    await expect.poll(() => handled().length, { timeout: 30_000 }).toBe(1);
    const error = 'RangeError: n must not be negative';
    expect(handled()[0]?.body).toMatchObject({
      failedComponent: SCRIPT,
      messageId: 'negative',
      error,
      failure: { kind: 'invalid-argument', retryable: false, cause: `ScriptError: ${error}` },
    });

    await expect.poll(async () => (await componentFailureEvents(harness, name)).length, { timeout: 10_000 }).toBe(1);
    const [event] = await componentFailureEvents(harness, name);
    expect(event).toMatchObject({
      componentName: SCRIPT,
      componentType: 'PROCESSOR',
      reason: error,
      attributes: { kind: 'invalid-argument', retryable: 'false', cause: `ScriptError: ${error}` },
    });
    await call(harness.executor, 'stopWorkflow', { name });
  }, 60_000);
});
