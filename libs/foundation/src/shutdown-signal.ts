/** The signals that begin a graceful shutdown of a loom process (its services, or a skill's). */
export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** Resolves with the first of SHUTDOWN_SIGNALS this process receives; only a program's main should listen for them. */
export function shutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    for (const signal of SHUTDOWN_SIGNALS) process.once(signal, () => resolve(signal));
  });
}
