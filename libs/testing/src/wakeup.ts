/**
 * What a loop that checks a condition waits on between checks: until another part says something changed (`wake`),
 * or `ms` pass. One wait at a time.
 */
export class Wakeup {
  private waiting: (() => void) | undefined;

  /** Ends the wait in progress, if any. */
  wake(): void {
    this.waiting?.();
  }

  /** Resolves once woken or once `ms` passed, whichever comes first. */
  async wait(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.waiting = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.waiting = undefined;
  }
}
