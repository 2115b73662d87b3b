/** A promise with its resolve and reject in hand. */
export interface PromiseWithResolvers<T> {
  readonly promise: Promise<T>;
  readonly resolve: (value: T) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * A promise and the functions that settle it, for code that settles it from elsewhere (a gate opened later, a
 * callback that reports readiness). ES2024's `Promise.withResolvers`, which Node 20 does not have.
 */
export function withResolvers<T = void>(): PromiseWithResolvers<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}
