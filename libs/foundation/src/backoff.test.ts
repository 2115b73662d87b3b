import { describe, expect, it } from 'vitest';
import { restartDelayMs } from './backoff.js';

describe('restartDelayMs', () => {
  const policy = { initialDelayMs: 1000, maxDelayMs: 300_000 };

  it('doubles from the first delay up to the cap', () => {
    const none = (): number => 0;
    expect([1, 2, 3, 4, 5].map((attempt) => restartDelayMs(policy, attempt, none))).toEqual([1000, 2000, 4000, 8000, 16_000]);
    expect(restartDelayMs(policy, 20, none)).toBe(300_000);
    expect(restartDelayMs(policy, 5000, none)).toBe(300_000);
  });

  it('takes up to 20 % off each delay at random, so delays still grow', () => {
    const most = (): number => 0.999_999;
    expect(restartDelayMs(policy, 1, most)).toBe(800);
    expect(restartDelayMs(policy, 2, most)).toBe(1600);
    expect(restartDelayMs(policy, 2, most)).toBeGreaterThan(restartDelayMs(policy, 1, () => 0));
    const spread = new Set(Array.from({ length: 50 }, () => restartDelayMs(policy, 3)));
    expect(spread.size).toBeGreaterThan(1);
    for (const delay of spread) expect(delay).toBeGreaterThan(3200 - 1);
  });
});
