import { type Dispatcher, Pool } from 'undici';

/** A skill's HTTP answer, its body read whole. */
export interface HttpAnswer {
  readonly status: number;
  /** Response headers, lower-case names (a repeated one: its values joined with `, `). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** One POST: where, what, over which keep-alive pool, until when. */
export interface HttpPost {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /** The skill's pool of connections to the url's origin (skillPool). */
  readonly pool: Dispatcher;
  readonly signal: AbortSignal;
}

/**
 * A pool of at most `connections` keep-alive HTTP/1.1 connections to one origin (http or https), one request at a
 * time on each. undici's own time-outs are off: the caller's signal is the attempt's deadline.
 */
export function skillPool(origin: string, connections: number): Pool {
  return new Pool(origin, { connections, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
}

/**
 * Sends one POST on the pool and reads the answer whole. Redirects are not followed and bodies are not decompressed
 * (no Accept-Encoding is sent): a skill's url is its endpoint. The request goes to undici's dispatcher with a handler
 * of its own (no stream or response object a call): about a fifth of the CPU of a node:http request on the same pool
 * size (docs/benchmarks.md, text-to-graph-profile). Rejects with the socket's error (its `code`) or, once the signal
 * aborts, the signal's reason; an aborted request's connection is closed.
 */
export function httpPost(post: HttpPost): Promise<HttpAnswer> {
  const { signal } = post;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise((resolve, reject) => {
    let abortRequest: ((reason: Error) => void) | undefined;
    const onAbort = (): void => abortRequest?.(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    let status = 0;
    let headers: Record<string, string> = {};
    const chunks: Buffer[] = [];
    const handler: Dispatcher.DispatchHandlers = {
      onConnect(abort) {
        abortRequest = abort;
        if (signal.aborted) abort(abortReason(signal));
      },
      onHeaders(statusCode, rawHeaders) {
        status = statusCode;
        headers = headersOf(rawHeaders);
        return true;
      },
      onData(chunk) {
        chunks.push(chunk);
        return true;
      },
      onComplete() {
        signal.removeEventListener('abort', onAbort);
        resolve({ status, headers, body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks) });
      },
      onError(error) {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    };
    post.pool.dispatch({ path: `${post.url.pathname}${post.url.search}`, method: 'POST', headers: post.headers, body: post.body }, handler);
  });
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('the call was aborted', 'AbortError');
}

/** undici's raw headers (name, value, name, value …) by lower-case name. */
function headersOf(raw: Buffer[] | string[] | null): Record<string, string> {
  const headers: Record<string, string> = {};
  if (raw === null) return headers;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = String(raw[index]).toLowerCase();
    const value = String(raw[index + 1]);
    const known = headers[name];
    headers[name] = known === undefined ? value : `${known}, ${value}`;
  }
  return headers;
}
