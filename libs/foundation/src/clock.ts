/** Where a loop reads the time and waits for it (the scheduler's, a timer source's): the system clock, or one a test moves by hand. */
export interface Clock {
  now(): Date;
  /** Resolves once the clock reaches `at`, or at once when `signal` aborts (it never rejects). */
  sleepUntil(at: Date, signal: AbortSignal): Promise<void>;
}

// setTimeout is monotonic and ignores changes of the wall clock (NTP steps, a resumed laptop), so long waits are
// cut into slices after which the wall clock is read again.
const LONGEST_SLICE_MS = 60_000;

/** The wall clock, with timers that do not keep the process alive. */
export const systemClock: Clock = wallClock(false);

/** The wall clock, whose waits keep the process running as a timer of its own would (a workflow's timer source). */
export const keepAliveClock: Clock = wallClock(true);

function wallClock(keepsProcessAlive: boolean): Clock {
  return {
    now: () => new Date(),
    sleepUntil: (at, signal) => sleepUntil(at, signal, keepsProcessAlive),
  };
}

async function sleepUntil(at: Date, signal: AbortSignal, keepsProcessAlive: boolean): Promise<void> {
  for (;;) {
    const remaining = at.getTime() - Date.now();
    if (remaining <= 0 || signal.aborted) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(remaining, LONGEST_SLICE_MS));
      if (!keepsProcessAlive) timer.unref();
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

interface Sleeper {
  readonly at: number;
  readonly wake: () => void;
}

/** A clock that moves only when told to: a test checks hours of a loop (fires across a DST change, a timer's ticks) without waiting for them. */
export class ManualClock implements Clock {
  private current: number;
  private readonly sleepers = new Set<Sleeper>();
  private sleeperAdded: (() => void) | undefined;

  constructor(start: Date) {
    this.current = start.getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  sleepUntil(at: Date, signal: AbortSignal): Promise<void> {
    if (at.getTime() <= this.current || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const sleeper: Sleeper = {
        at: at.getTime(),
        wake: () => {
          this.sleepers.delete(sleeper);
          signal.removeEventListener('abort', sleeper.wake);
          resolve();
        },
      };
      this.sleepers.add(sleeper);
      signal.addEventListener('abort', sleeper.wake, { once: true });
      const added = this.sleeperAdded;
      this.sleeperAdded = undefined;
      added?.();
    });
  }

  /** How many waits are pending. */
  get waiting(): number {
    return this.sleepers.size;
  }

  /** When the earliest pending wait ends; undefined when none is pending. */
  get nextWakeAt(): Date | undefined {
    let earliest: number | undefined;
    for (const sleeper of this.sleepers) if (earliest === undefined || sleeper.at < earliest) earliest = sleeper.at;
    return earliest === undefined ? undefined : new Date(earliest);
  }

  /** Resolves once at least `count` waits are pending (the code under test has caught up). */
  async untilWaiting(count: number): Promise<void> {
    while (this.sleepers.size < count) {
      await new Promise<void>((resolve) => {
        this.sleeperAdded = resolve;
      });
    }
  }

  /**
   * Moves to `end` one wake-up at a time: the time becomes that of the earliest pending wait, which wakes, and the
   * clock moves on once `count` waits are pending again.
   */
  async advanceTo(end: Date, count = 1): Promise<void> {
    for (;;) {
      const earliest = [...this.sleepers].sort((a, b) => a.at - b.at)[0];
      if (earliest === undefined || earliest.at > end.getTime()) break;
      this.current = Math.max(this.current, earliest.at);
      for (const sleeper of [...this.sleepers].filter((candidate) => candidate.at <= this.current)) sleeper.wake();
      await this.untilWaiting(count);
    }
    this.current = Math.max(this.current, end.getTime());
  }
}
