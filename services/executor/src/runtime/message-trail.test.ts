import { describe, expect, it } from 'vitest';
import { ComponentError } from './component-error.js';
import { MessageTrail, originOf, setOrigin, inheritOrigin } from './message-trail.js';

const message = (id: string) => ({ id, body: {}, headers: {} });

describe('MessageTrail', () => {
  it('keeps the events of a message and of the messages it led to, by the id it entered with, in order', () => {
    let now = 1_000;
    const trail = new MessageTrail({ maxMessages: 10, retentionMs: 60_000 }, () => now++);
    const run = trail.forRun('etl', 'run-1', 3)!;
    const source = message('m1');
    setOrigin(source, { messageId: 'm1', source: 'In' });
    run.accepted('In', source);
    const output = message('m1:0');
    inheritOrigin(output, source);
    run.processed('Split', source, [output]);
    run.attemptFailed('Write', output, 1, new ComponentError('Write', 'deadlock', true));
    run.failed('Write', output, 2, new ComponentError('Write', 'deadlock again', true), undefined);
    const found = trail.find('m1', '');
    expect(found?.events.map((event) => [event.kind, event.component, event.messageId, event.attempt])).toStrictEqual([
      ['ACCEPTED', 'In', 'm1', undefined],
      ['PROCESSED', 'Split', 'm1', undefined],
      ['ATTEMPT_FAILED', 'Write', 'm1:0', 1],
      ['FAILED', 'Write', 'm1:0', 2],
    ]);
    expect(found?.events[1]).toMatchObject({ outputIds: ['m1:0'], outputCount: 1, workflowName: 'etl', workflowVersion: 3, runId: 'run-1' });
    expect(found?.events[3]?.failure).toStrictEqual({ kind: 'unavailable', retryable: true, message: 'deadlock again' });
    expect(originOf(message('other'))).toStrictEqual({ messageId: 'other', source: '' });
    expect(trail.find('m1', 'another-workflow')).toBeUndefined();
  });

  it('carries an origin on the message object, out of its JSON and clones, and beside a frozen message', () => {
    const source = message('m1');
    setOrigin(source, { messageId: 'm1', source: 'In' });
    expect(JSON.stringify(source)).toBe('{"id":"m1","body":{},"headers":{}}');
    expect(originOf(structuredClone(source))).toStrictEqual({ messageId: 'm1', source: '' });
    const own = message('m2');
    setOrigin(own, { messageId: 'm2', source: 'Other' });
    inheritOrigin(own, source);
    expect(originOf(own)).toStrictEqual({ messageId: 'm2', source: 'Other' });
    const frozen = Object.freeze(message('m1:0'));
    inheritOrigin(frozen, source);
    const output = message('m1:0:0');
    inheritOrigin(output, frozen);
    expect([originOf(frozen), originOf(output)]).toStrictEqual([
      { messageId: 'm1', source: 'In' },
      { messageId: 'm1', source: 'In' },
    ]);
  });

  it('forgets the oldest message past maxMessages and any message past the retention', () => {
    let now = 0;
    const trail = new MessageTrail({ maxMessages: 2, retentionMs: 1_000 }, () => now);
    const run = trail.forRun('etl', 'run-1', 1)!;
    for (const id of ['a', 'b', 'c']) run.accepted('In', message(id));
    expect(trail.find('a', 'etl')).toBeUndefined();
    expect(trail.find('b', 'etl')?.events).toHaveLength(1);
    now = 1_001;
    expect(trail.find('c', 'etl')).toBeUndefined();
  });

  it('starts a message anew once its first event is past the retention, and evicts by its new place', () => {
    let now = 0;
    const trail = new MessageTrail({ maxMessages: 2, retentionMs: 1_000 }, () => now);
    const run = trail.forRun('etl', 'run-1', 1)!;
    run.accepted('In', message('a'));
    now = 1_001;
    run.retried('Check', message('a'));
    run.accepted('In', message('b'));
    expect(trail.find('a', 'etl')?.events.map((event) => event.kind)).toStrictEqual(['RETRIED']);
    run.accepted('In', message('c'));
    expect(trail.find('a', 'etl')).toBeUndefined();
    expect(trail.find('b', 'etl')?.events).toHaveLength(1);
    expect(trail.find('c', 'etl')?.events).toHaveLength(1);
  });

  it('records nothing when maxMessages is 0', () => {
    expect(new MessageTrail({ maxMessages: 0, retentionMs: 1_000 }).forRun('etl', 'run', 1)).toBeUndefined();
  });
});
