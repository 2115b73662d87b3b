import { describe, expect, it } from 'vitest';
import { ResourceExhaustedError } from './errors.js';
import { SlowConsumerError, StreamChannel } from './stream-channel.js';

/** Reads the channel to its end: the items, and the error it ended with (undefined when it ended cleanly). */
async function drain<T>(channel: StreamChannel<T>): Promise<{ items: T[]; error: unknown }> {
  const items: T[] = [];
  try {
    for await (const item of channel) items.push(item);
    return { items, error: undefined };
  } catch (error) {
    return { items, error };
  }
}

describe('StreamChannel', () => {
  it('hands items over in push order, waiting while empty, and ends after close with what was pushed before', async () => {
    const channel = new StreamChannel<number>({ capacity: 10 });
    const read: number[] = [];
    const reading = (async () => {
      for await (const item of channel) {
        read.push(item);
        // pushed while the consumer is busy: they wait in the backlog
        if (item === 1) for (const next of [2, 3]) channel.push(next);
      }
    })();
    channel.push(1);
    await expect.poll(() => read).toEqual([1, 2, 3]);
    expect(channel.state).toBe('open');
    channel.push(4);
    channel.push(5);
    channel.close();
    channel.push(6);
    await reading;
    expect(read).toEqual([1, 2, 3, 4, 5]);
    expect(channel.state).toBe('closed');
  });

  it('holds up to capacity items for a consumer that is not reading', async () => {
    const channel = new StreamChannel<string>({ capacity: 3 });
    for (const item of ['a', 'b', 'c']) channel.push(item);
    expect(channel.size).toBe(3);
    channel.close();
    await expect(drain(channel)).resolves.toEqual({ items: ['a', 'b', 'c'], error: undefined });
  });

  it('ends a consumer that fell more than capacity behind with SlowConsumerError, releasing the backlog', async () => {
    const channel = new StreamChannel<number>({ capacity: 3 });
    const iterator = channel[Symbol.asyncIterator]();
    channel.push(1);
    await expect(iterator.next()).resolves.toEqual({ value: 1, done: false });
    // the consumer is busy with 1: four more than it takes
    for (const item of [2, 3, 4, 5]) channel.push(item);
    expect(channel.state).toBe('overflowed');
    expect(channel.size).toBe(0);
    channel.push(6);
    const error: unknown = await iterator.next().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(SlowConsumerError);
    expect(error).toBeInstanceOf(ResourceExhaustedError);
    expect(error).toMatchObject({
      kind: 'resource-exhausted',
      capacity: 3,
      message: 'the watcher fell more than 3 events behind and its stream was ended; watch again to resume',
    });
    await expect(iterator.next()).resolves.toEqual({ value: undefined, done: true });
  });

  it('wakes a waiting consumer with the error when it falls behind', async () => {
    const channel = new StreamChannel<number>({ capacity: 1 });
    const iterator = channel[Symbol.asyncIterator]();
    const first = iterator.next();
    channel.push(1);
    await expect(first).resolves.toEqual({ value: 1, done: false });
    const second = iterator.next();
    channel.push(2);
    await expect(second).resolves.toEqual({ value: 2, done: false });
    channel.push(3);
    channel.push(4);
    await expect(iterator.next()).rejects.toBeInstanceOf(SlowConsumerError);
  });

  it('closes once: a second close, and a close after overflow, change nothing', async () => {
    const channel = new StreamChannel<number>({ capacity: 1 });
    channel.push(1);
    channel.close();
    channel.close();
    expect(channel.state).toBe('closed');
    await expect(drain(channel)).resolves.toEqual({ items: [1], error: undefined });

    const overflowed = new StreamChannel<number>({ capacity: 1 });
    overflowed.push(1);
    overflowed.push(2);
    overflowed.close();
    expect(overflowed.state).toBe('overflowed');
    const { items, error } = await drain(overflowed);
    expect(items).toEqual([]);
    expect(error).toBeInstanceOf(SlowConsumerError);
  });

  it('ends a waiting consumer when its call is cancelled, after what was pushed before', async () => {
    const cancel = new AbortController();
    const channel = new StreamChannel<string>({ capacity: 5, signal: cancel.signal });
    const iterator = channel[Symbol.asyncIterator]();
    channel.push('SERVING');
    await expect(iterator.next()).resolves.toEqual({ value: 'SERVING', done: false });
    const waiting = iterator.next();
    channel.push('NOT_SERVING');
    cancel.abort();
    channel.push('late');
    await expect(waiting).resolves.toEqual({ value: 'NOT_SERVING', done: false });
    await expect(iterator.next()).resolves.toEqual({ value: undefined, done: true });
    expect(channel.state).toBe('closed');
  });

  it('starts closed on a signal that already aborted', async () => {
    const channel = new StreamChannel<number>({ capacity: 1, signal: AbortSignal.abort() });
    channel.push(1);
    await expect(drain(channel)).resolves.toEqual({ items: [], error: undefined });
  });

  it('closes when the consumer stops iterating, dropping later pushes', async () => {
    const channel = new StreamChannel<number>({ capacity: 5 });
    channel.push(1);
    channel.push(2);
    for await (const item of channel) {
      expect(item).toBe(1);
      break;
    }
    expect(channel.state).toBe('closed');
    channel.push(3);
    expect(channel.size).toBe(1);
  });

  it('refuses a capacity that is not a whole number of at least 1, naming it', () => {
    expect(() => new StreamChannel({ capacity: 0 })).toThrow(/capacity must be a whole number of at least 1, not 0/);
    expect(() => new StreamChannel({ capacity: 1.5 })).toThrow(/capacity/);
  });
});
