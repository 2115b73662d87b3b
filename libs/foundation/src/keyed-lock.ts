import { withResolvers } from './with-resolvers.js';

/** Runs tasks one after another per key; tasks of different keys run concurrently. */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `task` once every earlier task of `key` has settled; its result or error is the caller's. */
  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const { promise: tail, resolve: release } = withResolvers();
    const chained = previous.then(() => tail);
    this.tails.set(key, chained);
    await previous;
    try {
      return await task();
    } finally {
      release();
      // the last task of a key removes its entry, so the map holds only keys in use
      if (this.tails.get(key) === chained) this.tails.delete(key);
    }
  }
}
