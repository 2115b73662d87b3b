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

/** This process's CPU time so far (user and system), in microseconds. */
export const processCpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/**
 * Publishes `warmup`, then `messages` sample payloads into the run's inlet 'in' and times the second part until the
 * sink has seen half of them (the flows filter out every other one), with the CPU time `cpuMicros` counts (default this
 * process's) per message. Stops the run; throws when a message failed.
 */
export async function measureThroughput(run, sink, { messages, warmup, samplePayload, label, cpuMicros = processCpuMicros }) {
  const withdrawal = new AbortController();
  const failedSoFar = () => run.counters().reduce((sum, counters) => sum + counters.messagesFailed, 0);
  const feed = async (count, offset) => {
    const arrived = sink.expect(count / 2);
    for (let index = 0; index < count; index++)
      await run.publish('in', { id: String(offset + index), body: samplePayload(offset + index), headers: {} }, withdrawal);
    // a failed message never reaches the sink: stop waiting for it (checked every second) rather than hang
    let check;
    const failing = new Promise((resolve) => {
      check = setInterval(() => failedSoFar() > 0 && resolve(), 1_000);
    });
    await Promise.race([arrived, failing]).finally(() => clearInterval(check));
  };
  await feed(warmup, 0);
  const cpuStarted = cpuMicros();
  const started = performance.now();
  await feed(messages, warmup);
  const seconds = (performance.now() - started) / 1000;
  const cpuMicrosPerMessage = (cpuMicros() - cpuStarted) / messages;
  const failed = failedSoFar();
  await run.stop(10_000);
  if (failed > 0) throw new Error(`${failed} messages failed in ${label}`);
  return { seconds, perSecond: messages / seconds, cpuMicrosPerMessage };
}
