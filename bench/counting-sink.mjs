// A sink component for benchmarks: counts what reaches it and says when a target count is reached.
import { outcome } from '@loom/executor';

/**
 * A processor factory to register in place of the logger, and `expect(n)`: resolves once n more messages arrived.
 * `observe`, if given, sees every message that arrives.
 */
export function countingSink(observe = undefined) {
  const state = { count: 0, target: Infinity, reached: undefined };
  const factory = {
    kind: 'processor',
    create: () =>
      Promise.resolve({
        process(batch) {
          state.count += batch.length;
          if (observe !== undefined) for (const message of batch) observe(message);
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

/**
 * Publishes `warmup`, then `messages` sample payloads into the run's inlet 'in' and times the second part until the
 * sink has seen half of them (the flows filter out every other one). Stops the run; throws when a message failed.
 */
export async function measureThroughput(run, sink, { messages, warmup, samplePayload, label }) {
  const withdrawal = new AbortController();
  const feed = async (count, offset) => {
    const arrived = sink.expect(count / 2);
    for (let index = 0; index < count; index++)
      await run.publish('in', { id: String(offset + index), body: samplePayload(offset + index), headers: {} }, withdrawal);
    await arrived;
  };
  await feed(warmup, 0);
  const started = performance.now();
  await feed(messages, warmup);
  const seconds = (performance.now() - started) / 1000;
  const failed = run.counters().reduce((sum, counters) => sum + counters.messagesFailed, 0);
  await run.stop(10_000);
  if (failed > 0) throw new Error(`${failed} messages failed in ${label}`);
  return { seconds, perSecond: messages / seconds };
}
