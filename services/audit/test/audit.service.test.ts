import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { type ServiceError, status } from '@grpc/grpc-js';
import { AuditClient, type WatchResponse } from '@loom/contracts';
import { AuditAppender, appendRequired, AuditRequiredError, call, createClient, fieldViolationsOf } from '@loom/service-kit';
import { afterEach, describe, expect, it } from 'vitest';
import { type AuditHarness, AuditEventType, event, executorToken, failure, logPath, startAudit } from './harness.js';

const running: AuditHarness[] = [];
afterEach(async () => {
  for (const harness of running.splice(0)) await harness.stop();
});

async function start(path: string, extra: readonly string[] = []): Promise<AuditHarness> {
  const harness = await startAudit(path, extra);
  running.push(harness);
  return harness;
}

function lines(path: string): Record<string, unknown>[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const specificationEvents = [
  event(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START, { workflowName: 'Article import_3d6f1b2a-94c8-4e7d-a5b1-6c0e8f2d9a17' }),
  event(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_PRIVILEGED_ACTION_EVENT, {
    workflowName: 'Article import_3d6f1b2a-94c8-4e7d-a5b1-6c0e8f2d9a17',
    reason: 'a workflow with the script engine started',
  }),
  event(AuditEventType.AUDIT_EVENT_TYPE_PRIVILEGED_WORKFLOW_COMPONENT_FAILURE, {
    workflowName: 'Article import_3d6f1b2a-94c8-4e7d-a5b1-6c0e8f2d9a17',
    componentName: 'Clean up_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
    componentType: 'PROCESSOR',
  }),
];

describe('audit service', () => {
  it('writes each specification event as one chained line, and Query and Watch return it', async () => {
    const path = logPath();
    const audit = await start(path);
    const stream = audit.executor.watch({ types: [], workflowName: '', fromSequence: 1 });
    const watched: WatchResponse[] = [];
    stream.on('data', (response: WatchResponse) => watched.push(response));
    stream.on('error', () => undefined);

    const acks = [];
    for (const appended of specificationEvents) acks.push(await call(audit.executor, 'append', { event: appended }));
    expect(acks.map((ack) => ack.sequence)).toEqual([1, 2, 3]);

    const written = lines(path);
    expect(written).toHaveLength(3);
    expect(written[0]).toMatchObject({
      seq: 1,
      type: 'WORKFLOW_START',
      workflow: specificationEvents[0]?.workflowName,
      actor: 'executor',
      prev: '0'.repeat(64),
      hash: acks[0]?.hash,
    });
    expect(written[0]?.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(written[1]).toMatchObject({ type: 'WORKFLOW_PRIVILEGED_ACTION_EVENT', reason: 'a workflow with the script engine started', prev: acks[0]?.hash });
    expect(written[2]).toMatchObject({
      type: 'PRIVILEGED_WORKFLOW_COMPONENT_FAILURE',
      component: specificationEvents[2]?.componentName,
      componentType: 'PROCESSOR',
    });

    const failures = await call(audit.executor, 'query', {
      types: [AuditEventType.AUDIT_EVENT_TYPE_PRIVILEGED_WORKFLOW_COMPONENT_FAILURE],
      workflowName: '',
      since: undefined,
      until: undefined,
      pageSize: 0,
      pageToken: '',
    });
    expect(failures.events.map((found) => [found.sequence, found.componentName])).toEqual([[3, specificationEvents[2]?.componentName]]);

    await expect.poll(() => watched.length).toBe(3);
    expect(watched.map((response) => response.event?.type)).toEqual(specificationEvents.map((appended) => appended.type));
    stream.cancel();
    expect(await call(audit.executor, 'verify', {})).toEqual({ ok: true, eventsChecked: 3, firstBrokenSequence: 0, problem: '' });
  });

  it('takes appends only from loom services, with the fields each type needs', async () => {
    const audit = await start(logPath());
    const anonymous = await failure(call(audit.anonymous, 'append', { event: specificationEvents[0] }));
    expect(anonymous.code).toBe(status.UNAUTHENTICATED);
    const missing = await failure(
      call(audit.executor, 'append', { event: event(AuditEventType.AUDIT_EVENT_TYPE_PRIVILEGED_WORKFLOW_COMPONENT_FAILURE, { workflowName: 'w' }) }),
    );
    expect(missing.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(missing).map((violation) => violation.field)).toEqual(['event.component_name', 'event.component_type']);
  });

  it('reports the sequence number of an edited old line', async () => {
    const path = logPath();
    const audit = await start(path);
    for (let index = 0; index < 10; index++)
      await call(audit.executor, 'append', { event: event(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START, { workflowName: `w${index}` }) });
    await audit.stop();
    running.length = 0;
    const text = readFileSync(path, 'utf8');
    const fourth = text.split('\n')[3] ?? '';
    const at = text.indexOf(fourth) + fourth.indexOf('"w3"') + 2;
    writeFileSync(path, `${text.slice(0, at)}X${text.slice(at + 1)}`);

    const reopened = await start(path);
    const verdict = await call(reopened.executor, 'verify', {});
    expect(verdict).toMatchObject({ ok: false, firstBrokenSequence: 4, eventsChecked: 3 });
    expect(verdict.problem).toMatch(/hash does not match/);
  });

  it('cuts a torn last line at start and continues the chain from the last whole event', async () => {
    const path = logPath();
    const first = await start(path);
    for (let index = 0; index < 3; index++) await call(first.executor, 'append', { event: specificationEvents[index % 3] });
    await first.stop();
    running.length = 0;
    appendFileSync(path, '{"seq":4,"time":"2026-11-21T20:00:00.000Z","type":"WORKF');

    const second = await start(path);
    expect((await call(second.executor, 'append', { event: specificationEvents[0] })).sequence).toBe(4);
    expect(await call(second.executor, 'verify', {})).toMatchObject({ ok: true, eventsChecked: 4 });
    expect(lines(path)).toHaveLength(4);
  });

  it('rotates by size and carries the chain across files', async () => {
    const path = logPath();
    const audit = await start(path, ['loom.security.audit.log.maxBytes=4096']);
    // ten rounds of six concurrent appends: a round is one group commit, and rotation happens between them
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from({ length: 6 }, (_, index) =>
          call(audit.executor, 'append', { event: event(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_STOP, { workflowName: `flow ${round * 6 + index}` }) }),
        ),
      );
    }
    expect(readdirSync(dirname(path)).filter((name) => /^audit\.log\.\d{12}$/.test(name)).length).toBeGreaterThan(1);
    expect(await call(audit.executor, 'verify', {})).toMatchObject({ ok: true, eventsChecked: 60 });
    const page = await call(audit.executor, 'query', { types: [], workflowName: 'flow 59', since: undefined, until: undefined, pageSize: 0, pageToken: '' });
    expect(page.events).toHaveLength(1);
    const all = await call(audit.executor, 'query', { types: [], workflowName: '', since: undefined, until: undefined, pageSize: 50, pageToken: '' });
    const rest = await call(audit.executor, 'query', {
      types: [],
      workflowName: '',
      since: undefined,
      until: undefined,
      pageSize: 50,
      pageToken: all.nextPageToken,
    });
    expect([...all.events, ...rest.events].map((found) => found.sequence)).toEqual(Array.from({ length: 60 }, (_, index) => index + 1));
  });

  it('appends a batch in order with one acknowledgement per event, or refuses it whole', async () => {
    const path = logPath();
    const audit = await start(path);
    const batch = Array.from({ length: 5 }, (_, index) => event(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_STOP, { workflowName: `flow ${index}` }));
    const { acks } = await call(audit.executor, 'appendBatch', { events: batch });
    expect(acks.map((ack) => ack.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(lines(path).map((line) => [line.seq, line.workflow, line.hash])).toEqual(acks.map((ack, index) => [ack.sequence, `flow ${index}`, ack.hash]));

    const bad = [batch[0], event(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START), batch[1], event(AuditEventType.AUDIT_EVENT_TYPE_UNSPECIFIED)];
    const refused = await failure(call(audit.executor, 'appendBatch', { events: bad as never }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(refused).map((violation) => violation.field)).toEqual(['events[1].workflow_name', 'events[3].type']);
    const tooMany = await failure(call(audit.executor, 'appendBatch', { events: Array.from({ length: 1001 }, () => batch[0] as never) }));
    expect(fieldViolationsOf(tooMany).map((violation) => violation.field)).toEqual(['events']);
    expect(lines(path)).toHaveLength(5);
    expect((await failure(call(audit.anonymous, 'appendBatch', { events: batch }))).code).toBe(status.UNAUTHENTICATED);
    expect((await call(audit.executor, 'verify', {})).ok).toBe(true);
  });

  it('gathers concurrent appends into batches with AuditAppender; a bad event fails only its own caller', async () => {
    const path = logPath();
    const audit = await start(path);
    const appender = new AuditAppender(audit.executor);
    const appends = Array.from({ length: 300 }, (_, index) =>
      index === 150
        ? appender.append({ type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_CONFIG_PUSHED })
        : appender.append({ type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START, workflowName: `flow ${index}` }),
    );
    const settled = await Promise.allSettled(appends);
    const refused = settled[150];
    expect(refused?.status).toBe('rejected');
    expect(fieldViolationsOf((refused as PromiseRejectedResult).reason as ServiceError).map((violation) => violation.field)).toEqual(['event.workflow_name']);
    const acks = settled.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    expect(acks).toHaveLength(299);
    expect(new Set(acks.map((ack) => ack.sequence)).size).toBe(299);
    const written = lines(path);
    expect(written).toHaveLength(299);
    // each caller's acknowledgement names the line of its own event
    const bySequence = new Map(written.map((line) => [line.seq, line.workflow]));
    settled.forEach((outcome, index) => {
      if (outcome.status === 'fulfilled') expect(bySequence.get(outcome.value.sequence)).toBe(`flow ${index}`);
    });
    expect(await call(audit.executor, 'verify', {})).toMatchObject({ ok: true, eventsChecked: 299 });

    const privileged = await appendRequired(appender, {
      type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_PRIVILEGED_ACTION_EVENT,
      workflowName: 'w',
      reason: 'script',
    });
    expect(privileged.sequence).toBe(300);
    await audit.stop();
    running.splice(running.indexOf(audit), 1);
    await expect(
      appendRequired(appender, { type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_PRIVILEGED_ACTION_EVENT, workflowName: 'w', reason: 'script' }),
    ).rejects.toThrow(AuditRequiredError);
  });

  it('accepts and drops events when disabled, and says so once at start', async () => {
    const path = logPath();
    const audit = await start(path, ['loom.security.audit.enabled=false']);
    expect(await call(audit.executor, 'append', { event: specificationEvents[0] })).toEqual({ sequence: 0, hash: '' });
    expect(await call(audit.executor, 'appendBatch', { events: specificationEvents })).toEqual({
      acks: specificationEvents.map(() => ({ sequence: 0, hash: '' })),
    });
    expect(existsSync(path)).toBe(false);
    expect((await failure(call(audit.executor, 'verify', {}))).code).toBe(status.FAILED_PRECONDITION);
  });

  it('fails closed through appendRequired when the audit service cannot write', async () => {
    const unreachable = createClient(AuditClient, '127.0.0.1:1', { token: executorToken, retry: false, deadlineMs: 2000 });
    try {
      await expect(
        appendRequired(unreachable, { type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_PRIVILEGED_ACTION_EVENT, workflowName: 'w', reason: 'script' }),
      ).rejects.toThrow(AuditRequiredError);
    } finally {
      unreachable.close();
    }
    const audit = await start(logPath());
    const written = await appendRequired(audit.executor, {
      type: AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_PRIVILEGED_ACTION_EVENT,
      workflowName: 'w',
      reason: 'script',
    });
    expect(written.sequence).toBe(1);
  });
});
