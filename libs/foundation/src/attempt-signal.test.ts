import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { attemptSignal } from './attempt-signal.js';

describe('attemptSignal', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('aborts with a TimeoutError once the time-out passes, and says so', () => {
    const attempt = attemptSignal(new AbortController().signal, 1_000);
    vi.advanceTimersByTime(999);
    expect(attempt.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(attempt.signal.aborted).toBe(true);
    expect((attempt.signal.reason as DOMException).name).toBe('TimeoutError');
    expect(attempt.timedOut()).toBe(true);
  });

  it("aborts with the call's reason when the call is aborted, before or during the attempt", () => {
    const call = new AbortController();
    const during = attemptSignal(call.signal, 1_000);
    call.abort(new Error('cancelled by the caller'));
    expect(during.signal.reason).toStrictEqual(new Error('cancelled by the caller'));
    expect(during.timedOut()).toBe(false);
    const before = attemptSignal(call.signal, 1_000);
    expect(before.signal.aborted).toBe(true);
    expect(before.timedOut()).toBe(false);
  });

  it('leaves nothing pending once released: no time-out, no listener on the call', () => {
    const call = new AbortController();
    const attempt = attemptSignal(call.signal, 1_000);
    attempt.release();
    expect(vi.getTimerCount()).toBe(0);
    call.abort();
    vi.advanceTimersByTime(2_000);
    expect(attempt.signal.aborted).toBe(false);
  });
});
