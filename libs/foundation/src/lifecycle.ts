/** For each state, the states it may move to; a state that may move nowhere is final. */
export type TransitionTable<S extends string> = { readonly [From in S]: readonly S[] };

/** A move the transition table does not allow: a bug in the caller, never a user's mistake. */
export class IllegalTransitionError extends Error {
  constructor(
    /** What the state machine belongs to (`workflow run 'etl'`). */
    readonly subject: string,
    readonly from: string,
    readonly to: string,
  ) {
    super(`${subject}: no transition from ${from} to ${to}`);
    this.name = 'IllegalTransitionError';
  }
}

/**
 * An explicit state machine: the current state and the table of the moves allowed from each.
 * `to` moves or throws IllegalTransitionError; nothing else changes the state.
 */
export class Lifecycle<S extends string> {
  private current: S;

  constructor(
    /** What the state machine belongs to, for the error's message. */
    readonly subject: string,
    private readonly table: TransitionTable<S>,
    initial: S,
  ) {
    this.current = initial;
  }

  get state(): S {
    return this.current;
  }

  /** True when the state is one of these. */
  is(...states: readonly S[]): boolean {
    return states.includes(this.current);
  }

  /** True when the table allows moving from the current state to `next`. */
  can(next: S): boolean {
    return this.table[this.current].includes(next);
  }

  /** True when the current state has no way out. */
  get final(): boolean {
    return this.table[this.current].length === 0;
  }

  /** Moves to `next`; throws IllegalTransitionError when the table does not allow it. */
  to(next: S): void {
    if (!this.can(next)) throw new IllegalTransitionError(this.subject, this.current, next);
    this.current = next;
  }
}
