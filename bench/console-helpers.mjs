// What the two console benches (console.bench.mjs, console-browser.bench.mjs) share: the machine's load, timing, and
// a `loom serve` with its console and the small workflows they store.
import { loadavg } from 'node:os';
import { ExecutorClient, WorkflowStoreClient } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { startLoomServe } from './loom-serve.mjs';

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

/**
 * Starts `loom serve` with its console on a free port and `token` an admin's, waits for the console's address, stores
 * `workflows` workflows named `<prefix>-<index>` and starts the first `running` of them. The caller stops `loom`
 * and closes the two clients.
 */
export async function startConsoleBench({ token, prefix, workflows, running }) {
  let consoleUrl;
  const loom = await startLoomServe({
    args: [
      ...['--set', 'loom.secrets.generateKeys=true', '--set', 'loom.console.port=0', '--set', 'loom.log.level=info'],
      ...['--set', `loom.auth.tokens.ops=${token}`, '--set', 'loom.auth.roles.ops=admin'],
    ],
    onLine: (entry) => {
      if (entry.msg === 'console listening') consoleUrl = entry.url;
    },
  });
  const store = createClient(WorkflowStoreClient, loom.address, { token });
  const executor = createClient(ExecutorClient, loom.address, { token });
  try {
    // the console starts once the services listen: its line follows 'loom listening'
    for (let wait = 0; consoleUrl === undefined && wait < 600; wait++) await new Promise((resolve) => setTimeout(resolve, 50));
    if (consoleUrl === undefined) throw new Error('the console did not log its address');
    const names = [];
    for (let index = 0; index < workflows; index++) {
      const { summary } = await call(store, 'putWorkflow', { compact: workflowText(prefix, index), sourceName: `${prefix}-${index}.yaml`, expectedVersion: 0 });
      names.push(summary.name);
    }
    for (const name of names.slice(0, running)) await call(executor, 'startWorkflow', { name });
    return { loom, consoleUrl, store, executor, names };
  } catch (error) {
    store.close();
    executor.close();
    await loom.stop();
    throw error;
  }
}
