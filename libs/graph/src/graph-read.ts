import { timeLimit } from './abort.js';
import { ageReadFailure, type GraphErrorContext, GraphTimeoutError } from './errors.js';
import { type GraphReadOptions, type GraphReadResult, type GraphRecord } from './graph-store.js';

/**
 * GraphStore.read's frame for both adapters: `fetch` reads at most maxRows + 1 records under a signal that aborts at the
 * time limit (given to the store as well, in whole ms); one record past maxRows says the result is truncated, and a
 * failure once the limit ran out is a GraphTimeoutError, whatever the store made of the abort. On AGE a write refused by
 * the READ ONLY transaction, or a statement cancelled by statement_timeout, is told as such (ageReadFailure).
 */
export async function timeLimitedRead(
  context: GraphErrorContext,
  options: GraphReadOptions,
  fetch: (signal: AbortSignal, timeoutMs: number) => Promise<GraphRecord[]>,
): Promise<GraphReadResult> {
  const timeoutMs = Math.max(1, Math.ceil(options.timeoutMs));
  const limit = timeLimit(timeoutMs, options.signal);
  try {
    const records = await fetch(limit.signal, timeoutMs);
    return { records: records.slice(0, options.maxRows), truncated: records.length > options.maxRows };
  } catch (error) {
    if (limit.expired()) throw new GraphTimeoutError(context.store, context.address, undefined, `no answer within ${timeoutMs} ms`, { cause: error });
    throw context.store === 'age' ? ageReadFailure(error, context) : error;
  } finally {
    limit.clear();
  }
}
