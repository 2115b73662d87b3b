import { describe, expect, it } from 'vitest';
import { withResolvers } from './with-resolvers.js';

describe('withResolvers', () => {
  it('settles its promise with the value given to resolve, once', async () => {
    const { promise, resolve } = withResolvers<number>();
    resolve(7);
    resolve(8);
    await expect(promise).resolves.toBe(7);
  });

  it('rejects its promise with the reason given to reject', async () => {
    const { promise, reject } = withResolvers();
    const reason = new RangeError('refused');
    reject(reason);
    await expect(promise).rejects.toBe(reason);
  });

  it('stays pending until settled', async () => {
    const { promise, resolve } = withResolvers<string>();
    const seen: string[] = [];
    void promise.then((value) => seen.push(value));
    await Promise.resolve();
    expect(seen).toEqual([]);
    resolve('open');
    await promise;
    expect(seen).toEqual(['open']);
  });
});
