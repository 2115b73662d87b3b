import { type Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** A skill's HTTP answer, its body read whole. */
export interface HttpAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** One POST: where, what, over which keep-alive pool, until when. */
export interface HttpPost {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /** The skill's pool (an https Agent for an https url). */
  readonly agent: HttpAgent;
  readonly signal: AbortSignal;
}

/**
 * Sends one POST with node:http on a keep-alive pool and reads the answer whole. Redirects are not followed and
 * bodies are not decompressed (no Accept-Encoding is sent): a skill's url is its endpoint. Chosen over a fetch
 * (node-fetch, or Node's own) because it costs half the CPU a call on loom's path (docs/benchmarks.md,
 * text-to-graph-profile); rejects with the socket's error (its `code`) or the signal's AbortError.
 */
export function httpPost(post: HttpPost): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const send = post.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const outgoing = send(
      post.url,
      { method: 'POST', headers: { ...post.headers, 'content-length': String(post.body.byteLength) }, agent: post.agent, signal: post.signal },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        // a connection closed before the answer's end is an error here, never an `end`
        response.on('error', reject);
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(post.body);
  });
}
