/** How retries and restarts back off: the first delay, doubling to a cap, each delay jittered downwards. */
export interface BackoffPolicy {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** Share of each delay that is random, 0 to 0.5; default 0.2. */
  readonly jitter?: number;
}

const DEFAULT_JITTER = 0.2;

/**
 * The delay before restart attempt `attempt` (1 for the first): min(cap, initial × 2^(attempt−1)), less a random share
 * of up to `jitter`. With jitter at most 0.5, each uncapped delay is longer than the one before.
 */
export function restartDelayMs(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1);
  // 2^exponent overflows to Infinity long after the cap is reached; min() keeps it finite
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(exponent, 62));
  const jitter = Math.min(0.5, Math.max(0, policy.jitter ?? DEFAULT_JITTER));
  return Math.max(1, Math.round(base * (1 - jitter * random())));
}
