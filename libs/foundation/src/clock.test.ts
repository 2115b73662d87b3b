import { describe, expect, it } from 'vitest';
import { keepAliveClock, ManualClock, systemClock } from './clock.js';

describe('clocks', () => {
  it('a manual clock wakes its waits in time order as it is moved, and a wait ends at once when its signal aborts', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00.000Z'));
    const woken: string[] = [];
    const never = new AbortController();
    void clock.sleepUntil(new Date('2026-01-01T00:00:02.000Z'), never.signal).then(() => woken.push(`2 at ${clock.now().getTime() % 10_000}`));
    void clock.sleepUntil(new Date('2026-01-01T00:00:01.000Z'), never.signal).then(() => woken.push(`1 at ${clock.now().getTime() % 10_000}`));
    const aborted = new AbortController();
    const cut = clock.sleepUntil(new Date('2026-01-01T01:00:00.000Z'), aborted.signal);
    expect(clock.waiting).toBe(3);
    aborted.abort();
    await cut;
    expect(clock.waiting).toBe(2);
    await clock.advanceTo(new Date('2026-01-01T00:00:05.000Z'), 0);
    expect(woken).toEqual(['1 at 1000', '2 at 2000']);
    expect(clock.now().toISOString()).toBe('2026-01-01T00:00:05.000Z');
  });

  it('the wall clocks wait until the time asked, or until the signal aborts', async () => {
    for (const clock of [systemClock, keepAliveClock]) {
      const started = Date.now();
      await clock.sleepUntil(new Date(started + 20), new AbortController().signal);
      expect(Date.now()).toBeGreaterThanOrEqual(started + 20);
      const aborted = new AbortController();
      const waiting = clock.sleepUntil(new Date(started + 3_600_000), aborted.signal);
      aborted.abort();
      await waiting;
    }
  });

  it("keepAliveClock's wait keeps the process running; systemClock's does not", async () => {
    // the resources that keep the event loop alive: an unref'd timer is not one of them
    const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    for (const [clock, keeps] of [
      [keepAliveClock, 1],
      [systemClock, 0],
    ] as const) {
      const before = timers();
      const waiting = new AbortController();
      const wait = clock.sleepUntil(new Date(Date.now() + 3_600_000), waiting.signal);
      expect(timers() - before).toBe(keeps);
      waiting.abort();
      await wait;
    }
  });
});
