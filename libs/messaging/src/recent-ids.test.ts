import { describe, expect, it } from 'vitest';
import { RecentIds } from './recent-ids.js';

describe('the recent ids of a workflow stream', () => {
  it('lets a delivery in once per stored message: the same message again yes, the same id stored elsewhere no', () => {
    const recent = new RecentIds(60_000);
    expect(recent.delivered('a', 1)).toBe(true);
    expect(recent.delivered('a', 1)).toBe(true); // delivered again (a nak, a crash): it enters again
    expect(recent.delivered('a', 7)).toBe(false); // stored twice under one id: the second is not processed
    recent.stored('b', 2);
    expect(recent.delivered('b', 3)).toBe(false);
    expect(recent.delivered('b', 2)).toBe(true);
  });

  it('keeps the first sequence an id was delivered at when its publish is answered later', () => {
    const recent = new RecentIds(60_000);
    recent.publishing('c', Promise.resolve({ sequence: 9 }));
    expect(recent.get('c')).toBeInstanceOf(Promise);
    expect(recent.delivered('c', 4)).toBe(true);
    recent.stored('c', 9);
    expect(recent.get('c')).toBe(4);
    recent.forget('c'); // a failed publish forgets only what no delivery confirmed
    expect(recent.get('c')).toBe(4);
    recent.publishing('d', Promise.resolve({ sequence: 5 }));
    recent.forget('d');
    expect(recent.get('d')).toBeUndefined();
  });

  it('forgets ids past the duplicate window, and the oldest past its size', () => {
    let now = 0;
    const recent = new RecentIds(1_000, 3, () => now);
    recent.stored('a', 1);
    now = 500;
    recent.stored('b', 2);
    now = 1_200;
    expect(recent.get('a')).toBeUndefined();
    expect(recent.get('b')).toBe(2);
    recent.stored('c', 3);
    recent.stored('d', 4);
    recent.stored('e', 5);
    expect([recent.get('b'), recent.get('c'), recent.get('e')]).toEqual([undefined, 3, 5]);
    expect(recent.size).toBe(3);
  });
});
