import { IllegalTransitionError } from '@loom/foundation';
import { createLogger } from '@loom/telemetry';
import { describe, expect, it } from 'vitest';
import { systemClock } from '@loom/foundation';
import { ExecutorPort } from './executor-port.js';
import { RunSupervisor, SUPERVISOR_TRANSITIONS } from './run-supervisor.js';

/** A supervisor whose executor is never reached in these tests (no workflow is known). */
function supervisor(): RunSupervisor {
  const executor = new ExecutorPort(() => {
    throw new Error('these tests make no executor call');
  });
  return new RunSupervisor({ executor, logger: createLogger({ level: 'silent' }), backoff: { initialDelayMs: 100, maxDelayMs: 1000 }, clock: systemClock });
}

describe('run supervisor life cycle', () => {
  it('has its transition table: FOLLOWING and ACTING alternate, CLOSED is final', () => {
    expect(SUPERVISOR_TRANSITIONS).toEqual({ FOLLOWING: ['ACTING', 'CLOSED'], ACTING: ['FOLLOWING', 'CLOSED'], CLOSED: [] });
  });

  it('acts between beginActing and endActing; ending when not acting does nothing', () => {
    const subject = supervisor();
    expect(subject.state).toBe('FOLLOWING');
    subject.endActing();
    expect(subject.state).toBe('FOLLOWING');
    subject.beginActing();
    expect(subject.state).toBe('ACTING');
    subject.endActing();
    subject.endActing();
    expect(subject.state).toBe('FOLLOWING');
    subject.close();
  });

  it('refuses to begin acting twice (a leadership bug that would cancel the pending restarts) with IllegalTransitionError', () => {
    const subject = supervisor();
    subject.beginActing();
    expect(() => subject.beginActing()).toThrow(IllegalTransitionError);
    expect(() => subject.beginActing()).toThrow('run supervisor: no transition from ACTING to ACTING');
    expect(subject.state).toBe('ACTING');
    subject.close();
  });

  it('closes once, from either state; a closed supervisor never acts again', () => {
    const acting = supervisor();
    acting.beginActing();
    acting.close();
    acting.close();
    expect(acting.state).toBe('CLOSED');
    expect(() => acting.beginActing()).toThrow(IllegalTransitionError);
    acting.endActing();
    expect(acting.state).toBe('CLOSED');

    const following = supervisor();
    following.close();
    expect(following.state).toBe('CLOSED');
  });
});
