// A sink component for benchmarks: counts what reaches it and says when a target count is reached.
import { outcome } from '@loom/executor';

/** A processor factory to register in place of the logger, and `expect(n)`: resolves once n more messages arrived. */
export function countingSink() {
  const state = { count: 0, target: Infinity, reached: undefined };
  const factory = {
    kind: 'processor',
    create: () =>
      Promise.resolve({
        process(batch) {
          state.count += batch.length;
          if (state.count >= state.target) state.reached?.();
          return Promise.resolve(batch.map(() => outcome.none()));
        },
        close: () => Promise.resolve(),
      }),
  };
  const expect = (target) => {
    state.count = 0;
    state.target = target;
    return new Promise((resolve) => (state.reached = resolve));
  };
  return { factory, expect };
}
