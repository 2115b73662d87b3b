/**
 * Runs a shutdown once: the first `call` starts it, every later call gets the same promise, so a second caller
 * resolves (or rejects) only when the first shutdown has finished. (OpenTelemetry's BindOnceFuture.)
 */
export class ShutdownOnce<A extends unknown[] = []> {
  private running: Promise<void> | undefined;

  constructor(private readonly shutdown: (...args: A) => Promise<void>) {}

  /** True once `call` has been made. */
  get called(): boolean {
    return this.running !== undefined;
  }

  /** Starts the shutdown with the first call's arguments; returns the one shutdown's promise to every caller. */
  call(...args: A): Promise<void> {
    if (this.running === undefined) {
      // the shutdown starts at once (its first steps, such as leaving a running state, are seen by the caller); one that
      // throws before its first await still rejects the promise every caller shares
      try {
        this.running = this.shutdown(...args);
      } catch (error) {
        this.running = Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
    }
    return this.running;
  }
}
