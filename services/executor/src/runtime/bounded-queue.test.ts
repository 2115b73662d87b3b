import { describe, expect, it } from 'vitest';
import { BoundedQueue } from './bounded-queue.js';

describe('bounded queue gathering', () => {
  it('takes a full batch as soon as it is there, without waiting out the gather time', async () => {
    const queue = new BoundedQueue<number>('test', 100);
    const taken = queue.take(5, 60_000);
    for (let n = 0; n < 7; n++) await queue.put(n);
    expect(await taken).toEqual([0, 1, 2, 3, 4]);
  });

  it('takes a partial batch once the gather time has passed since the first item', async () => {
    const queue = new BoundedQueue<number>('test', 100);
    await queue.put(1);
    const started = performance.now();
    const taken = queue.take(20, 150);
    // the second item comes while the take gathers, however late a loaded machine runs this
    await queue.put(2);
    expect(await taken).toEqual([1, 2]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('stops gathering when the queue closes, and never waits for more than its capacity', async () => {
    const queue = new BoundedQueue<number>('test', 3);
    await queue.put(1);
    const taken = queue.take(10, 60_000);
    queue.close();
    expect(await taken).toEqual([1]);

    const small = new BoundedQueue<number>('small', 2);
    await small.put(1);
    await small.put(2);
    expect(await small.take(10, 60_000)).toEqual([1, 2]);
  });
});
