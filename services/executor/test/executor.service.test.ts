import { status } from '@grpc/grpc-js';
import { AuditEventType, ComponentState, WorkflowState } from '@loom/contracts';
import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit';
import { failure } from '@loom/service-kit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type ExecutorHarness, PIPELINE, pipelineWorkflow, startExecutor } from './harness.js';

const harnesses: ExecutorHarness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.stop();
});

async function start(extra: readonly string[] = []): Promise<ExecutorHarness> {
  const harness = await startExecutor(extra);
  harnesses.push(harness);
  return harness;
}

async function push(harness: ExecutorHarness, workflow = pipelineWorkflow()): Promise<string> {
  const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
  return put.summary?.name ?? workflow.name;
}

describe('executor', () => {
  it('runs a pushed workflow end to end: 1,000 published messages arrive transformed and filtered, counters match', async () => {
    const harness = await start();
    const name = await push(harness);
    const started = await call(harness.executor, 'startWorkflow', { name });
    expect(started).toMatchObject({ state: WorkflowState.WORKFLOW_STATE_RUNNING, alreadyRunning: false });
    // idempotent: a second start answers the running run, starts nothing (one WORKFLOW_START audited below)
    expect(await call(harness.executor, 'startWorkflow', { name })).toEqual({ runId: started.runId, state: started.state, alreadyRunning: true });

    const published: string[] = [];
    for (let chunk = 0; chunk < 1000; chunk += 50) {
      const acks = await Promise.all(
        Array.from({ length: 50 }, (_, offset) => {
          const n = chunk + offset;
          // every other article is too short for the filter
          const text = n % 2 === 0 ? `article number ${n} about graphs` : `short ${n}`;
          return call(harness.executor, 'publishMessage', {
            workflowName: name,
            inlet: PIPELINE.inlet,
            body: { n, title: `title ${n}`, text },
            headers: {},
            messageId: '',
          });
        }),
      );
      published.push(...acks.map((ack) => ack.messageId));
    }
    expect(new Set(published).size).toBe(1000);

    const sinkCounters = async () =>
      (await call(harness.executor, 'getWorkflowStatus', { name })).components.find((component) => component.name === PIPELINE.sink);
    await expect.poll(async () => (await sinkCounters())?.messagesIn, { timeout: 20_000 }).toBe(500);
    const logged = harness.logged().filter((line) => line.component === PIPELINE.sink && line.messageId !== undefined);
    expect(logged).toHaveLength(500);
    const bodies = logged.map((line) => line.body as { n: number; title: string; words: number });
    expect(bodies.every((body) => body.n % 2 === 0 && body.title === `TITLE ${body.n}` && body.words === 5)).toBe(true);
    expect(new Set(bodies.map((body) => body.n)).size).toBe(500);

    const current = await call(harness.executor, 'getWorkflowStatus', { name });
    expect(current.state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
    const counters = Object.fromEntries(current.components.map((component) => [component.name, component]));
    expect(counters[PIPELINE.inlet]).toMatchObject({ messagesOut: 1000 });
    expect(counters[PIPELINE.transformer]).toMatchObject({ messagesIn: 1000, messagesOut: 1000, messagesFailed: 0 });
    expect(counters[PIPELINE.filter]).toMatchObject({ messagesIn: 1000, messagesOut: 500, messagesFailed: 0 });
    expect(counters[PIPELINE.sink]).toMatchObject({ messagesIn: 500, messagesFailed: 0, queueDepth: 0 });

    // in memory nothing processed is kept: a replay of the running workflow is refused, naming the settings that keep it
    const replay = await failure(call(harness.executor, 'replayMessages', { workflow: name, sinceMs: 60_000, fromSequence: 0 }));
    expect(replay.code).toBe(status.FAILED_PRECONDITION);
    expect(replay.details).toMatch(/^replay needs durable messages: .*loom\.messaging\.nats\.servers and loom\.messaging\.stream\.keepProcessedMs/);

    const stopped = await call(harness.executor, 'stopWorkflow', { name, drainTimeout: undefined });
    expect(stopped.state).toBe(WorkflowState.WORKFLOW_STATE_STOPPED);
    const runEvents = [
      AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_PRIVILEGED_ACTION_EVENT,
      AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START,
      AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_STOP,
    ];
    const audited = async () =>
      (await call(harness.audit, 'query', { types: runEvents, workflowName: name, since: undefined, until: undefined, pageSize: 0, pageToken: '' })).events.map(
        (event) => event.type,
      );
    await expect.poll(audited).toEqual(runEvents);
    const refused = await failure(
      call(harness.executor, 'publishMessage', { workflowName: name, inlet: PIPELINE.inlet, body: { n: 1 }, headers: {}, messageId: '' }),
    );
    expect(refused.code).toBe(status.FAILED_PRECONDITION);
  });

  it('with experiments off lists script components as DISABLED and refuses to start a workflow using one, naming the flag; tells stored from unknown', async () => {
    const harness = await start(['loom.experimental.enabled=false']);
    const catalog = await call(harness.executor, 'listComponentDefinitions', {});
    const transformer = catalog.definitions.find((definition) => definition.qualifiedName === COMPONENT_KINDS.MESSAGE_TRANSFORMER);
    expect(transformer?.state).toBe(ComponentState.COMPONENT_STATE_DISABLED);
    expect(catalog.definitions.find((definition) => definition.qualifiedName === COMPONENT_KINDS.INLET)?.state).toBe(ComponentState.COMPONENT_STATE_AVAILABLE);
    const name = await push(harness);
    const refused = await failure(call(harness.executor, 'startWorkflow', { name }));
    expect(refused.code).toBe(status.FAILED_PRECONDITION);
    expect(refused.details).toContain('loom.experimental.enabled');
    expect(refused.details).toContain(PIPELINE.transformer);
    expect((await failure(call(harness.executor, 'getWorkflowStatus', { name }))).code).toBe(status.NOT_FOUND);

    // a workflow stored but not running, told from one not stored, naming the command that starts it
    const publish = (workflowName: string) =>
      failure(call(harness.executor, 'publishMessage', { workflowName, inlet: PIPELINE.inlet, body: { n: 1 }, headers: {}, messageId: '' }));
    expect(await publish(name)).toMatchObject({
      code: status.NOT_FOUND,
      details: `workflow '${name}' is stored but not running: start it (loom workflow start '${name}')`,
    });
    expect(await publish('etl')).toMatchObject({ code: status.NOT_FOUND, details: "no workflow named 'etl'" });
    expect(await failure(call(harness.executor, 'getWorkflowStatus', { name: 'etl' }))).toMatchObject({ details: "no workflow named 'etl'" });
    expect(await failure(call(harness.executor, 'startWorkflow', { name: 'etl' }))).toMatchObject({
      code: status.NOT_FOUND,
      details: "no workflow named 'etl'",
    });
  });

  it('dry-runs sample messages and answers what each component emitted', async () => {
    const harness = await start();
    const workflow = pipelineWorkflow();
    const result = await call(harness.executor, 'dryRun', {
      workflow: workflowToProto(workflow),
      inlet: '',
      until: '',
      maxMessages: 0,
      messages: [
        { id: 'a', body: { title: 'graphs', text: 'a long enough article text' }, headers: {} },
        { id: 'b', body: { title: 'short', text: 'too short' }, headers: {} },
      ],
    });
    const byName = Object.fromEntries(result.outputs.map((output) => [output.component, output]));
    expect(byName[PIPELINE.transformer]?.messages.map((message) => message.body?.title as unknown)).toEqual(['GRAPHS', 'SHORT']);
    expect(byName[PIPELINE.filter]?.messages.map((message) => message.id)).toEqual(['a']);
    expect(byName[PIPELINE.sink]).toMatchObject({ messages: [], errors: [], skipped: false });
    // the inlet by its plain name, as a compact file names it
    const plain = await call(harness.executor, 'dryRun', {
      workflow: workflowToProto(workflow),
      inlet: 'Articles',
      until: '',
      maxMessages: 0,
      messages: [{ id: 'c', body: { title: 'x', text: 'one' }, headers: {} }],
    });
    expect(plain.outputs.find((output) => output.component === PIPELINE.transformer)?.messages.map((message) => message.id)).toEqual(['c']);
    // what the sink took in; until stops at the transformer (the filter and sink take nothing); max_messages caps the samples
    expect(byName[PIPELINE.sink]?.received.map((message) => message.id)).toEqual(['a']);
    const bounded = await call(harness.executor, 'dryRun', {
      workflow: workflowToProto(workflow),
      inlet: '',
      until: 'Clean up',
      maxMessages: 1,
      messages: [
        { id: 'd', body: { title: 'first', text: 'a long enough article text' }, headers: {} },
        { id: 'e', body: { title: 'second', text: 'a long enough article text' }, headers: {} },
      ],
    });
    const boundedBy = Object.fromEntries(bounded.outputs.map((output) => [output.component, output]));
    expect(boundedBy[PIPELINE.inlet]).toMatchObject({ truncated: true });
    expect(boundedBy[PIPELINE.transformer]?.messages.map((message) => message.id)).toEqual(['d']);
    expect(boundedBy[PIPELINE.filter]).toMatchObject({ received: [], messages: [] });
    const unknown = await failure(
      call(harness.executor, 'dryRun', { workflow: workflowToProto(workflow), inlet: '', until: 'Nowhere', maxMessages: 0, messages: [] }),
    );
    expect(unknown).toMatchObject({ code: status.INVALID_ARGUMENT });
    expect(unknown.details).toContain("until: names no component of the workflow: 'Nowhere'");
  });
});
