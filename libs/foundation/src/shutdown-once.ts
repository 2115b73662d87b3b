/**
 * Runs a shutdown once: the first `call` starts it, every later call gets the same promise, so a second caller
 * resolves (or rejects) only when the first shutdown has finished. (OpenTelemetry's BindOnceFuture.)
 */
export class ShutdownOnce {
  private running: Promise<void> | undefined;

  constructor(private readonly shutdown: () => Promise<void>) {}

  /** True once `call` has been made. */
  get called(): boolean {
    return this.running !== undefined;
  }

  /** Starts the shutdown on the first call; returns the one shutdown's promise to every caller. */
  call(): Promise<void> {
    // a shutdown that throws before its first await still rejects the promise every caller shares
    this.running ??= Promise.resolve().then(() => this.shutdown());
    return this.running;
  }
}
