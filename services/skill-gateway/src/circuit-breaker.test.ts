import { describe, expect, it } from 'vitest';
import { CircuitBreaker, type CircuitStateName, IllegalCircuitTransitionError } from './circuit-breaker.js';

describe('CircuitBreaker', () => {
  it('opens after consecutive failures, probes once after the open time, and closes on the probe’s success', () => {
    let now = 0;
    const changes: CircuitStateName[] = [];
    const breaker = new CircuitBreaker(
      { failureThreshold: 3, openMs: 100 },
      () => now,
      (state) => changes.push(state),
    );
    breaker.failed(breaker.admit());
    breaker.failed(breaker.admit());
    breaker.succeeded(breaker.admit()); // a success resets the count
    breaker.failed(breaker.admit());
    breaker.failed(breaker.admit());
    expect(breaker.state).toBe('CLOSED');
    breaker.failed(breaker.admit());
    expect(breaker.state).toBe('OPEN');
    expect(breaker.admit()).toBe('refuse');

    now = 100;
    const probe = breaker.admit();
    expect(probe).toBe('probe');
    expect(breaker.state).toBe('HALF_OPEN');
    expect(breaker.admit()).toBe('refuse'); // one probe at a time
    breaker.failed(probe);
    expect(breaker.state).toBe('OPEN');
    expect(breaker.admit()).toBe('refuse');

    now = 250;
    const second = breaker.admit();
    breaker.succeeded(second);
    expect(breaker.state).toBe('CLOSED');
    expect(breaker.admit()).toBe('call');
    expect(changes).toEqual(['OPEN', 'HALF_OPEN', 'OPEN', 'HALF_OPEN', 'CLOSED']);
  });

  it('lets the next attempt probe at once when a probe is abandoned', () => {
    let now = 0;
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 1000 }, () => now);
    breaker.failed(breaker.admit());
    now = 1000;
    breaker.abandoned(breaker.admit());
    expect(breaker.state).toBe('OPEN');
    expect(breaker.admit()).toBe('probe');
  });

  it('ignores failures of calls that were in flight when it opened', () => {
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 1000 }, () => 0);
    const a = breaker.admit();
    const b = breaker.admit();
    breaker.failed(a);
    breaker.failed(b);
    breaker.succeeded(b);
    expect(breaker.state).toBe('OPEN');
  });

  it('refuses a transition its table does not have', () => {
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 1000 }, () => 0);
    expect(() => breaker.succeeded('probe')).toThrow(IllegalCircuitTransitionError);
  });
});
