// What the two console benches (console.bench.mjs, console-browser.bench.mjs) share: the machine's load, timing, and
// the small workflows they store.
import { loadavg } from 'node:os';

export const loadNow = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ');
export const ms = (value) => `${value.toFixed(1)} ms`;

/** A compact workflow of two components named `<prefix>-<index>`, padded to three digits. */
export function workflowText(prefix, index) {
  return [`name: ${prefix}-${String(index).padStart(3, '0')}`, 'components:', '  In: source.Inlet', '  Done: sink.Logger', 'links:', '  - In -> Done', ''].join(
    '\n',
  );
}

async function timed(work) {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

export async function runs(count, work) {
  const times = [];
  for (let run = 0; run < count; run++) times.push(await timed(work));
  return times;
}

/** Runs `work` over `items`, at most `limit` at a time (what the console does for the status calls). */
export async function mapLimited(items, limit, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}
