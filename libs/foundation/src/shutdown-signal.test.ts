import { afterEach, describe, expect, it } from 'vitest';
import { SHUTDOWN_SIGNALS, shutdownSignal } from './shutdown-signal.js';

describe('shutdownSignal', () => {
  const listening = new Map(SHUTDOWN_SIGNALS.map((signal) => [signal, process.listenerCount(signal)]));
  afterEach(() => {
    // the signal that did not come keeps its listener: removed here, so the process's own handling is left as it was
    for (const signal of SHUTDOWN_SIGNALS) for (const listener of process.listeners(signal).slice(listening.get(signal))) process.off(signal, listener);
  });

  it.each(SHUTDOWN_SIGNALS)('resolves with %s, the first one received', async (signal) => {
    const received = shutdownSignal();
    process.emit(signal);
    await expect(received).resolves.toBe(signal);
  });
});
