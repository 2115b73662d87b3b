/** Throws the signal's reason when it is already aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  signal?.throwIfAborted();
}

/** Calls `onAbort` once when the signal aborts; the returned function stops listening. */
export function whenAborted(signal: AbortSignal | undefined, onAbort: () => void): () => void {
  if (signal === undefined) return () => undefined;
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

/** Settles like `promise`, or rejects with the signal's reason as soon as it aborts. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined); // its outcome no longer matters, but must not be an unhandled rejection
    return Promise.reject(signal.reason as Error);
  }
  let stop = (): void => undefined;
  const aborted = new Promise<never>((_, reject) => {
    stop = whenAborted(signal, () => reject(signal.reason as Error));
  });
  return Promise.race([promise, aborted]).finally(stop);
}

/** A signal for work under a time limit, and whether the limit (not the caller's own signal) ended it. */
export interface TimeLimit {
  readonly signal: AbortSignal;
  /** The time limit ran out. */
  expired(): boolean;
  /** Stops the timer; call it once the work settled. */
  clear(): void;
}

/** Aborts when `signal` does or once `timeoutMs` have passed, whichever comes first. */
export function timeLimit(timeoutMs: number, signal: AbortSignal | undefined): TimeLimit {
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new Error(`the time limit of ${timeoutMs} ms ran out`));
  }, timeoutMs);
  const stopListening = whenAborted(signal, () => controller.abort(signal?.reason));
  if (signal?.aborted === true) controller.abort(signal.reason);
  return {
    signal: controller.signal,
    expired: () => expired,
    clear() {
      clearTimeout(timer);
      stopListening();
    },
  };
}
