import { ErrorCode, NatsError } from 'nats';
import { describe, expect, it } from 'vitest';
import { retryingNoResponders } from './jetstream-publish.js';

// the rule alone, with attempts that fail as the NATS client fails; the publish itself against a real server is in
// test/messaging.test.ts
const noResponders = (): NatsError => NatsError.errorForCode(ErrorCode.NoResponders);

/** An attempt that fails with each of `failures` in turn, then answers 'stored'; counts its calls. */
function attempts(failures: Error[]): { attempt: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    attempt: () => {
      const failure = failures[calls++];
      return failure === undefined ? Promise.resolve('stored') : Promise.reject(failure);
    },
    calls: () => calls,
  };
}

describe('retryingNoResponders', () => {
  it('tries again after "no responders" and answers the first success', async () => {
    const { attempt, calls } = attempts([noResponders(), noResponders()]);
    await expect(retryingNoResponders(attempt, 8, 1)).resolves.toBe('stored');
    expect(calls()).toBe(3);
  });

  it('gives the last "no responders" up after its tries', async () => {
    const { attempt, calls } = attempts(Array.from({ length: 5 }, noResponders));
    await expect(retryingNoResponders(attempt, 3, 1)).rejects.toMatchObject({ code: ErrorCode.NoResponders });
    expect(calls()).toBe(3);
  });

  it('does not try again after any other failure', async () => {
    const timeout = NatsError.errorForCode(ErrorCode.Timeout);
    const { attempt, calls } = attempts([timeout]);
    await expect(retryingNoResponders(attempt, 8, 1)).rejects.toBe(timeout);
    expect(calls()).toBe(1);
  });
});
