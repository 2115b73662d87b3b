/** A POST to an HTTP server of this process, as its socket would have carried it. */
export interface LocalHttpRequest {
  /** The path and query (`/v2/annotate`). */
  readonly path: string;
  /** Request headers, lower-case names (`content-type`, `traceparent`). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /** The caller's deadline and cancellation: an abort is the connection closed. */
  readonly signal: AbortSignal;
}

/** The answer, as it would have come back over the socket. */
export interface LocalHttpAnswer {
  readonly status: number;
  /** Response headers, lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/**
 * An HTTP server of this process that also answers a POST in memory, through the same limits, span, metrics, checks
 * and error bodies as over its socket. Rejects, as a socket would, only when the caller's signal aborts.
 */
export interface LocalHttpServer {
  post(request: LocalHttpRequest): Promise<LocalHttpAnswer>;
}

/** The server of this process listening at a URL's origin (`http://127.0.0.1:8085`), if one answers in memory. */
export type LocalHttpServers = (origin: string) => LocalHttpServer | undefined;
