import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { LoomError, ValidationError } from '@loom/domain';
import { IllegalTransitionError, type ListenAddress, ListenError, Lifecycle, ShutdownOnce, type TransitionTable } from '@loom/foundation';
import { type ComponentContext, type ComponentFactory, type Emit, type Source } from '../runtime/component.js';
import { TRACE_HEADERS } from '../runtime/tracing.js';
import {
  admit,
  type Admission,
  challenge,
  type Signed,
  signatureRefusal,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  type WebhookAuthentication,
  webhookAuthentication,
  type WebhookSecurity,
  webhookTls,
} from './webhook-auth.js';

export { WEBHOOK_PERMISSION, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER, type WebhookSecurity } from './webhook-auth.js';

/** The largest request body a webhook takes; a larger one is answered 413. */
export const WEBHOOK_MAX_BODY_BYTES = 1024 * 1024;

/** Most messages one batch request (a JSON array, or NDJSON lines) may carry. */
export const WEBHOOK_MAX_BATCH = 1000;

/** Content types whose body is NDJSON: one JSON object per line, a batch. */
const NDJSON_TYPES = ['application/x-ndjson', 'application/ndjson', 'application/jsonl', 'application/x-jsonlines'];

/** Request headers with this prefix become message headers (lower-cased, prefix kept). */
export const WEBHOOK_HEADER_PREFIX = 'x-loom-';

/**
 * A webhook could not listen on its port: `hook.options.port 8101 is in use (EADDRINUSE): set hook.options.port to a
 * free port` (its host option, or `server.host` when it has none, for an address this machine does not have).
 */
export class WebhookListenError extends ListenError {
  /** `<instance>.options.port`. */
  readonly option: string;

  constructor(address: ListenAddress, cause: unknown) {
    super(address, cause);
    this.option = address.portSetting;
  }
}

/**
 * A source that turns each POST of a JSON object to `path` on `port` into a message, answering
 * 202 `{ id }` once accepted; a JSON array or an NDJSON body is a batch, answered 202 `{ ids }`
 * once every message of it was accepted (stored, in durable mode; a full stream is answered 429). It listens on the `host` option, or where loom's own
 * server listens (`serverHost`, `server.host`: loopback by default), over HTTPS when `loom.tls`
 * is set. A caller proves itself as the `authentication` option says (webhook-auth.ts); anyone
 * else is answered 401 (403: a token without the operate permission) before its body is read.
 */
export function webhookFactory(
  serverHost: string,
  security: WebhookSecurity,
): { readonly kind: 'source'; create(context: ComponentContext): Promise<WebhookSource> } {
  return {
    kind: 'source',
    // a bad option rejects the promise rather than throwing from create
    create: (context: ComponentContext) => new Promise<WebhookSource>((resolve) => resolve(webhookSource(context, serverHost, security))),
  } satisfies ComponentFactory;
}

function webhookSource(context: ComponentContext, serverHost: string, security: WebhookSecurity): WebhookSource {
  const port = context.options.integer('port');
  if (port < 0 || port > 65_535) throw ValidationError.of(`${context.name}.options.port`, 'must be between 0 and 65535', 'OUT_OF_RANGE');
  const path = context.options.string('path');
  const host = context.options.optionalString('host')?.trim();
  if (host === '') throw ValidationError.of(`${context.name}.options.host`, 'must be an address to listen on, or left out', 'INVALID_VALUE');
  const authentication = webhookAuthentication(context, security);
  const [listenHost, hostSetting] = host === undefined ? [serverHost, 'server.host'] : [host, `${context.name}.options.host`];
  return new WebhookSource(context, port, path.startsWith('/') ? path : `/${path}`, listenHost, hostSetting, authentication, webhookTls(security));
}

/** Life cycle of a webhook: listening once started; a stopped webhook does not start again. */
type WebhookState = 'created' | 'listening' | 'stopping' | 'stopped';

const WEBHOOK_TRANSITIONS: TransitionTable<WebhookState> = {
  created: ['listening', 'stopped'],
  listening: ['stopping'],
  stopping: ['stopped'],
  stopped: [],
};

/** The webhook source; `port` reads back the bound port (useful when the option is 0). */
export class WebhookSource implements Source {
  private server: Server | undefined;
  /** Requests whose message went to emit, until their answer is written. */
  private readonly answering = new Set<Promise<void>>();
  private readonly lifecycle = new Lifecycle<WebhookState>('webhook', WEBHOOK_TRANSITIONS, 'created');
  private readonly stopOnce = new ShutdownOnce(() => this.close());

  constructor(
    private readonly context: ComponentContext,
    private readonly requestedPort: number,
    private readonly path: string,
    /** The address it listens on. */
    readonly host: string,
    /** The setting that chose `host`: its host option, or `server.host`. */
    private readonly hostSetting: string,
    private readonly authentication: WebhookAuthentication,
    /** The certificate and key of HTTPS; plain HTTP without them. */
    private readonly tls: { readonly cert: Buffer; readonly key: Buffer } | undefined,
  ) {}

  /** The address the server is bound to, as the operating system reports it; the requested host before start. */
  get address(): string {
    const address = this.server?.address();
    return typeof address === 'object' && address !== null ? address.address : this.host;
  }

  /** The port the server is bound to; the requested port before start. */
  get port(): number {
    const address = this.server?.address();
    return typeof address === 'object' && address !== null ? address.port : this.requestedPort;
  }

  async start(emit: Emit): Promise<void> {
    if (!this.lifecycle.is('created')) throw new IllegalTransitionError('webhook', this.lifecycle.state, 'listening');
    const handle = (request: IncomingMessage, response: ServerResponse): void => this.admitThenHandle(request, response, emit);
    const server = this.tls === undefined ? createServer(handle) : createTlsServer({ cert: this.tls.cert, key: this.tls.key }, handle);
    // Expect: 100-continue is answered only once the headers are admitted, so a refused client never sends its body
    server.on('checkContinue', handle);
    await new Promise<void>((resolve, reject) => {
      const failed = (error: NodeJS.ErrnoException): void => {
        const settings = { portSetting: `${this.context.name}.options.port`, hostSetting: this.hostSetting };
        reject(new WebhookListenError({ ...settings, host: this.host, port: this.requestedPort }, error));
      };
      server.once('error', failed);
      server.listen({ port: this.requestedPort, host: this.host }, () => {
        server.off('error', failed);
        resolve();
      });
    });
    server.on('error', (error) => this.context.logger.error({ component: this.context.name, err: error }, 'webhook server failed'));
    this.server = server;
    this.lifecycle.to('listening');
    const fields = { component: this.context.name, host: this.address, port: this.port, path: this.path, tls: this.tls !== undefined };
    this.context.logger.info({ ...fields, authentication: this.authentication.mode }, 'webhook listening');
    if (this.authentication.mode === 'none') {
      this.context.logger.warn(fields, 'webhook takes requests from anyone who reaches it: its authentication option is none');
    }
    if (this.authentication.mode === 'hmac' && this.authentication.replays === undefined) {
      this.context.logger.warn(fields, 'webhook signatures cover the body alone (signed_timestamp is false): a captured request can be sent again');
    }
  }

  /** Refuses a request its headers do not admit (401/403, Connection: close, the body never read), else handles it. */
  private admitThenHandle(request: IncomingMessage, response: ServerResponse, emit: Emit): void {
    const admitted = admit(this.authentication, request);
    const settle = (admission: Admission): void => {
      if (admission.admitted) {
        if (request.headers.expect?.toLowerCase() === '100-continue') response.writeContinue();
        this.handle(request, response, emit, admission.signed);
        return;
      }
      this.refuse(request, response, admission.status, admission.reason);
    };
    if (admitted instanceof Promise) {
      admitted.then(settle, (error: unknown) => {
        this.context.logger.error({ component: this.context.name, err: error }, 'webhook could not check a caller');
        this.refuse(request, response, 503, 'the credential check failed');
      });
    } else settle(admitted);
  }

  /**
   * Answers a refusal with a challenge and no detail, then closes the connection: the body is never read (node
   * ends a Connection: close socket once the answer is out). The reason goes to the log only.
   */
  private refuse(request: IncomingMessage, response: ServerResponse, status: 401 | 403 | 503, reason: string): void {
    this.context.logger.warn({ component: this.context.name, remoteAddress: request.socket.remoteAddress, status, reason }, 'webhook request refused');
    response.setHeader('Connection', 'close');
    if (status === 401) response.setHeader('WWW-Authenticate', challenge(this.authentication));
    answer(response, status, { error: status === 401 ? 'unauthorized' : status === 403 ? 'forbidden' : 'unavailable' });
  }

  /** Stops taking requests, lets the answers already owed go out, and closes every connection; a second call waits for the first. */
  stop(): Promise<void> {
    return this.stopOnce.call();
  }

  /** Whether stop has begun: answers then say Connection: close, and new bodies are refused 503. */
  private get stopping(): boolean {
    return this.lifecycle.is('stopping', 'stopped');
  }

  private async close(): Promise<void> {
    const server = this.server;
    if (server === undefined) {
      // never listening (not started, or its port was taken): nothing to close
      this.lifecycle.to('stopped');
      return;
    }
    this.lifecycle.to('stopping');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // the answers to messages already emitted are still written (with Connection: close);
    // whatever is still open after them is idle or still uploading a body nobody will take
    await Promise.all(this.answering);
    server.closeAllConnections();
    await closed;
    this.lifecycle.to('stopped');
  }

  private handle(request: IncomingMessage, response: ServerResponse, emit: Emit, signed: Signed | undefined): void {
    const pathname = (request.url ?? '/').split('?', 1)[0];
    if (pathname !== this.path) {
      request.resume();
      answer(response, 404, { error: `no webhook at ${pathname}; POST to ${this.path}` });
      return;
    }
    if (request.method !== 'POST') {
      request.resume();
      response.setHeader('Allow', 'POST');
      answer(response, 405, { error: `method ${request.method} not allowed; POST to ${this.path}` });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number(request.headers['content-length'] ?? 0) > WEBHOOK_MAX_BODY_BYTES;
    request.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > WEBHOOK_MAX_BODY_BYTES) {
        tooLarge = true;
        chunks.length = 0;
      } else chunks.push(chunk);
    });
    request.on('error', () => response.destroy());
    request.on('end', () => {
      if (tooLarge) {
        // the rest was read and dropped, so the client gets the answer rather than a reset
        response.setHeader('Connection', 'close');
        answer(response, 413, { error: `the body is larger than ${WEBHOOK_MAX_BODY_BYTES} bytes` });
        return;
      }
      const raw = Buffer.concat(chunks);
      const refusal = signed !== undefined && this.authentication.mode === 'hmac' ? signatureRefusal(this.authentication, raw, signed) : undefined;
      if (refusal !== undefined) {
        this.refuse(request, response, 401, refusal);
        return;
      }
      const text = raw.toString('utf8');
      const ndjson = NDJSON_TYPES.includes((request.headers['content-type'] ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '');
      const body = ndjson ? parseLines(text) : parseBody(text);
      if (typeof body === 'string') {
        answer(response, 400, { error: body });
        return;
      }
      if (this.stopping) {
        response.setHeader('Connection', 'close');
        answer(response, 503, { error: 'the workflow is stopping' });
        return;
      }
      const answering = Array.isArray(body) ? this.deliverBatch(request, response, body, emit) : this.deliver(request, response, body, emit);
      this.answering.add(answering);
      void answering.finally(() => this.answering.delete(answering));
    });
  }

  private async deliver(request: IncomingMessage, response: ServerResponse, body: Record<string, unknown>, emit: Emit): Promise<void> {
    const id = randomUUID();
    try {
      await emit({ id, body, headers: loomHeaders(request) });
    } catch (error) {
      this.context.logger.warn({ component: this.context.name, messageId: id, err: error }, 'webhook message was not accepted');
      if (this.stopping) response.setHeader('Connection', 'close');
      const full = isFull(error);
      answer(response, full ? 429 : 503, { error: full ? FULL_ANSWER : 'the workflow did not accept the message' });
      return;
    }
    await this.answered(response, 202, { id });
  }

  /** A batch goes in in order; the answer lists the ids of the messages accepted (all of them: 202; a prefix: 503, or 429 when the workflow's stream is full). */
  private async deliverBatch(request: IncomingMessage, response: ServerResponse, bodies: readonly Record<string, unknown>[], emit: Emit): Promise<void> {
    const headers = loomHeaders(request);
    const ids: string[] = [];
    for (const body of bodies) {
      const id = randomUUID();
      try {
        await emit({ id, body, headers: { ...headers } });
      } catch (error) {
        this.context.logger.warn(
          { component: this.context.name, messageId: id, accepted: ids.length, of: bodies.length, err: error },
          'webhook batch was not accepted whole',
        );
        if (this.stopping) response.setHeader('Connection', 'close');
        const why = isFull(error) ? `; ${FULL_ANSWER}` : '';
        answer(response, isFull(error) ? 429 : 503, {
          error: `the workflow accepted ${ids.length} of the ${bodies.length} messages; the rest were not accepted${why}`,
          ids,
        });
        return;
      }
      ids.push(id);
    }
    await this.answered(response, 202, { ids });
  }

  /** Writes the answer and resolves once it went out (stop waits for these). */
  private async answered(response: ServerResponse, status: number, body: Record<string, unknown>): Promise<void> {
    if (this.stopping) response.setHeader('Connection', 'close');
    answer(response, status, body);
    if (!response.writableFinished && !response.destroyed) {
      await new Promise((resolve) => {
        response.once('finish', resolve);
        response.once('close', resolve);
      });
    }
  }
}

/** An NDJSON body as a batch of JSON objects (blank lines skipped), or what is wrong with it, naming the line. */
function parseLines(text: string): Record<string, unknown>[] | string {
  const bodies: Record<string, unknown>[] = [];
  const lines = text.split('\n');
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let body: unknown;
    try {
      body = JSON.parse(line);
    } catch {
      return `line ${index + 1}: not valid JSON`;
    }
    if (!isObject(body)) return `line ${index + 1}: each line must be a JSON object, not ${describe(body)}`;
    bodies.push(body);
  }
  if (bodies.length === 0) return 'the body holds no message';
  if (bodies.length > WEBHOOK_MAX_BATCH) return `the batch holds ${bodies.length} messages; at most ${WEBHOOK_MAX_BATCH} per request`;
  return bodies;
}

/** The body as a JSON object, a JSON array of them (a batch), or what is wrong with it. */
function parseBody(text: string): Record<string, unknown> | Record<string, unknown>[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'the body is not valid JSON';
  }
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) return 'the batch holds no message';
    if (parsed.length > WEBHOOK_MAX_BATCH) return `the batch holds ${parsed.length} messages; at most ${WEBHOOK_MAX_BATCH} per request`;
    const bad = parsed.findIndex((item) => !isObject(item));
    if (bad >= 0) return `[${bad}]: each message of a batch must be a JSON object, not ${describe(parsed[bad])}`;
    return parsed as Record<string, unknown>[];
  }
  if (isObject(parsed)) return parsed;
  return `the body must be a JSON object or an array of them, not ${describe(parsed)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

function loomHeaders(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    // node lower-cases header names already
    if (
      !(name.startsWith(WEBHOOK_HEADER_PREFIX) || TRACE_HEADERS.includes(name)) ||
      value === undefined ||
      name === WEBHOOK_SIGNATURE_HEADER ||
      name === WEBHOOK_TIMESTAMP_HEADER
    )
      continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** What a caller is told when the workflow's message stream is full (durable mode): nothing was dropped, try again later. */
const FULL_ANSWER = "the workflow's message stream is full: try again once it has caught up";

/** True for a refusal because the workflow's stream is full (a resource-exhausted error): answered 429, not 503. */
function isFull(error: unknown): boolean {
  return error instanceof LoomError && error.kind === 'resource-exhausted';
}

function answer(response: ServerResponse, status: number, body: Record<string, unknown>): void {
  if (response.headersSent || response.destroyed) return;
  const text = JSON.stringify(body);
  response.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  response.end(text);
}
