import { describe, expect, it } from 'vitest';
import { ShutdownOnce } from './shutdown-once.js';
import { withResolvers } from './with-resolvers.js';

describe('ShutdownOnce', () => {
  it('runs the shutdown once and lets a second caller wait until the first has finished', async () => {
    const gate = withResolvers();
    let runs = 0;
    let finished = false;
    const once = new ShutdownOnce(async () => {
      runs += 1;
      await gate.promise;
      finished = true;
    });
    expect(once.called).toBe(false);
    const first = once.call();
    expect(runs).toBe(1);
    let secondSawFinished: boolean | undefined;
    const second = once.call().then(() => {
      secondSawFinished = finished;
    });
    expect(once.called).toBe(true);
    await Promise.resolve();
    expect(secondSawFinished).toBeUndefined();
    gate.resolve();
    await Promise.all([first, second]);
    expect(secondSawFinished).toBe(true);
    expect(runs).toBe(1);
    await once.call();
    expect(runs).toBe(1);
  });

  it("runs with the first call's arguments; a later caller's are ignored", async () => {
    const deadlines: number[] = [];
    const once = new ShutdownOnce((deadlineMs: number) => {
      deadlines.push(deadlineMs);
      return Promise.resolve();
    });
    await Promise.all([once.call(1000), once.call(5)]);
    expect(deadlines).toEqual([1000]);
  });

  it('gives every caller the failure of the one shutdown', async () => {
    const gate = withResolvers();
    const once = new ShutdownOnce(() => gate.promise);
    const first = once.call();
    const second = once.call();
    gate.reject(new Error('port stuck'));
    await expect(first).rejects.toThrow('port stuck');
    await expect(second).rejects.toThrow('port stuck');
  });

  it('shares a failure thrown before the shutdown awaits anything', async () => {
    const once = new ShutdownOnce(() => {
      throw new Error('at once');
    });
    await expect(once.call()).rejects.toThrow('at once');
    await expect(once.call()).rejects.toThrow('at once');
  });
});
