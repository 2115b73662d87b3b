import { FailedPreconditionError } from '@loom/domain';

/** States of a skill's circuit, as in loom.v1.CircuitState. */
export type CircuitStateName = 'CLOSED' | 'OPEN' | 'HALF_OPEN';

/** What happened to the circuit. */
type CircuitEvent =
  'failure-below-threshold' | 'failure-at-threshold' | 'success' | 'open-time-passed' | 'probe-failed' | 'probe-succeeded' | 'probe-abandoned';

/** The legal transitions: state → event → next state. Anything else is an IllegalCircuitTransitionError. */
const TRANSITIONS: Readonly<Record<CircuitStateName, Partial<Record<CircuitEvent, CircuitStateName>>>> = {
  CLOSED: { 'failure-below-threshold': 'CLOSED', 'failure-at-threshold': 'OPEN', success: 'CLOSED' },
  OPEN: { 'open-time-passed': 'HALF_OPEN' },
  HALF_OPEN: { 'probe-failed': 'OPEN', 'probe-succeeded': 'CLOSED', 'probe-abandoned': 'OPEN' },
};

/** A transition the table does not allow (a bug in the caller, never a skill's doing). */
export class IllegalCircuitTransitionError extends FailedPreconditionError {}

/** How a circuit opens and when it tries again. */
export interface CircuitPolicy {
  /** Consecutive failed attempts that open it. */
  readonly failureThreshold: number;
  /** How long it stays open before one probe is let through. */
  readonly openMs: number;
}

/** What `admit` decided for one attempt. */
export type Admission = 'call' | 'probe' | 'refuse';

/**
 * A circuit breaker for one skill. CLOSED lets every attempt through and counts consecutive failures; at the
 * threshold it opens. OPEN refuses attempts until `openMs` has passed, then lets exactly one probe through
 * (HALF_OPEN) while refusing the rest; the probe's success closes it, its failure (or abandonment) opens it again.
 */
export class CircuitBreaker {
  private current: CircuitStateName = 'CLOSED';
  private failures = 0;
  private openedAt = 0;
  private probing = false;

  constructor(
    private readonly policy: CircuitPolicy,
    private readonly now: () => number = Date.now,
    private readonly onChange: (state: CircuitStateName) => void = () => undefined,
  ) {}

  get state(): CircuitStateName {
    return this.current;
  }

  /** Whether an attempt may go to the skill now: as a normal call, as the half-open probe, or not at all. */
  admit(): Admission {
    if (this.current === 'OPEN') {
      if (this.now() - this.openedAt < this.policy.openMs) return 'refuse';
      this.transition('open-time-passed');
    }
    if (this.current === 'HALF_OPEN') {
      if (this.probing) return 'refuse';
      this.probing = true;
      return 'probe';
    }
    return 'call';
  }

  /** The skill answered an admitted attempt (any answer but a failure: 2xx, or a 4xx that is the caller's fault). */
  succeeded(admission: Admission): void {
    if (admission === 'probe') {
      this.probing = false;
      this.transition('probe-succeeded');
    } else if (this.current === 'CLOSED') {
      this.transition('success');
    }
    // a normal call answered after the circuit opened meanwhile: the open circuit stands until its probe
  }

  /** An admitted attempt failed (connection error, time-out, 429, 5xx). */
  failed(admission: Admission): void {
    if (admission === 'probe') {
      this.probing = false;
      this.transition('probe-failed');
      return;
    }
    if (this.current !== 'CLOSED') return; // already open: this failure was in flight when it opened
    this.failures++;
    this.transition(this.failures >= this.policy.failureThreshold ? 'failure-at-threshold' : 'failure-below-threshold');
  }

  /** An admitted attempt ended without an answer the circuit can judge (the caller cancelled it). */
  abandoned(admission: Admission): void {
    if (admission !== 'probe') return;
    this.probing = false;
    this.transition('probe-abandoned');
    // the probe told nothing: the next attempt may probe at once
    this.openedAt = this.now() - this.policy.openMs;
  }

  private transition(event: CircuitEvent): void {
    const next = TRANSITIONS[this.current][event];
    if (next === undefined) throw new IllegalCircuitTransitionError(`circuit ${this.current}: '${event}' is not a legal transition`);
    const previous = this.current;
    this.current = next;
    if (next === 'OPEN') this.openedAt = this.now();
    if (next === 'CLOSED' && event !== 'failure-below-threshold') this.failures = 0;
    if (next !== previous) this.onChange(next);
  }
}
