import { status } from '@grpc/grpc-js';
import { AuditClient, AuditEventType, SchedulerClient } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { failure, freeLoopbackPort } from '@loom/service-kit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { storedName } from './fake-store.js';
import { FakeExecutor, FakeStore, type SchedulerHarness, startScheduler } from './harness.js';

const opsToken = 'ops-token-for-schedules-0123456789';
const harnesses: SchedulerHarness[] = [];
const clients: { close(): void }[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const harness of harnesses.splice(0)) await harness.stop();
});

async function serve(overrides: string[] = []): Promise<{ harness: SchedulerHarness; ops: SchedulerClient; name: string }> {
  const store = new FakeStore();
  const name = storedName('Nightly audit');
  // a schedule that never fires during the test
  store.put(name, { schedule: { enabled: true, cron: '0 0 3 1 1 *', timezone: 'UTC', overlap: 'SKIP', catchUp: 'NONE' } });
  const harness = await startScheduler({
    store,
    executor: new FakeExecutor(),
    overrides: [`loom.auth.tokens.ops=${opsToken}`, 'loom.auth.roles.ops=operator', ...overrides],
  });
  harnesses.push(harness);
  const ops = createClient(SchedulerClient, `127.0.0.1:${harness.running.port}`, { retry: false, token: opsToken });
  clients.push(ops);
  await expect.poll(async () => (await call(ops, 'listSchedules', {})).schedules.map((schedule) => schedule.workflowName)).toEqual([name]);
  return { harness, ops, name };
}

describe('pausing and resuming a schedule is audited, fail closed', () => {
  it('appends SCHEDULE_CHANGED with the actor and the workflow version for a pause and a resume', async () => {
    const { harness, ops, name } = await serve();
    await call(ops, 'pauseSchedule', { workflowName: name });
    await call(ops, 'resumeSchedule', { workflowName: name });
    const audit = createClient(AuditClient, `127.0.0.1:${harness.running.port}`, { retry: false });
    clients.push(audit);
    const query = {
      types: [AuditEventType.AUDIT_EVENT_TYPE_SCHEDULE_CHANGED],
      workflowName: name,
      since: undefined,
      until: undefined,
      pageSize: 0,
      pageToken: '',
    };
    const { events } = await call(audit, 'query', query);
    expect(events.map((event) => [event.actor, event.attributes])).toEqual([
      ['ops', { change: 'paused', version: '1' }],
      ['ops', { change: 'resumed', version: '1' }],
    ]);
  });

  it('with the audit log down, refuses a pause with UNAVAILABLE and leaves the schedule running', async () => {
    const { ops, name } = await serve([`loom.services.audit.address=127.0.0.1:${await freeLoopbackPort()}`]);
    const refused = await failure(call(ops, 'pauseSchedule', { workflowName: name }));
    expect(refused.code).toBe(status.UNAVAILABLE);
    expect(refused.details).toContain('SCHEDULE_CHANGED could not be written');
    const [listed] = (await call(ops, 'listSchedules', {})).schedules;
    expect(listed?.paused).toBe(false);
  });
});
