import { type AddressInfo } from 'node:net';
import { context, type Context, type Counter, type Histogram, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import fastifySwagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import { Lifecycle, type LocalHttpAnswer, type LocalHttpRequest, type LocalHttpServer, ShutdownOnce, type TransitionTable } from '@loom/foundation';
import { type Logger } from '@loom/telemetry';
import { PayloadTooLargeError, ServiceBusyError, type SkillErrorBody, UnsupportedMediaTypeError } from './errors.js';
import { type JsonSchema, JsonText, type SkillDefinition, type SkillRequest, type SkillRoute } from './skill-definition.js';
import {
  BODY_TYPES,
  BodyChecks,
  ERROR_DESCRIPTIONS,
  ERROR_SCHEMA,
  errorAnswer,
  errorAnswerOf,
  type JsonParser,
  jsonAnswer,
  parseJsonBody,
  valueAnswer,
} from './skill-answers.js';

/** Limits every skill server enforces. */
export interface SkillLimits {
  /** Largest request body. */
  readonly bodyLimitBytes: number;
  /** Requests handled at once; one more is answered 503 with Retry-After. */
  readonly concurrency: number;
  /** Time a request may take; past it the answer is 503. */
  readonly timeLimitMs: number;
  /** Seconds in `Retry-After` of a 503. */
  readonly retryAfterSeconds: number;
}

/** Where and how a skill server runs. */
export interface SkillServerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly limits: SkillLimits;
  /** Time in-flight requests get to finish on stop before their connections are cut. */
  readonly shutdownDeadlineMs: number;
  readonly logger: Logger;
  /** Tracer of the request spans; the global tracer when absent. */
  readonly tracer?: Tracer;
}

/** The lifecycle of a skill server. */
export type SkillServerState = 'created' | 'starting' | 'running' | 'stopping' | 'stopped';

const TRANSITIONS: TransitionTable<SkillServerState> = {
  created: ['starting', 'stopped'],
  starting: ['running', 'stopping'],
  running: ['stopping'],
  stopping: ['stopped'],
  stopped: [],
};

/** Paths every skill server serves besides its routes; they are never limited. */
const OPERATIONAL_PATHS = new Set(['/health', '/metrics', '/openapi.json']);

const propagator = new W3CTraceContextPropagator();
const headerGetter = {
  keys: (carrier: Record<string, unknown>) => Object.keys(carrier),
  get: (carrier: Record<string, unknown>, key: string) => {
    const value = carrier[key];
    return typeof value === 'string' || Array.isArray(value) ? (value as string | string[]) : undefined;
  },
};

interface RequestState {
  span: Span;
  spanContext: Context;
  started: bigint;
  limited: boolean;
  readonly method: string;
  readonly route: string;
}

/**
 * One skill service over HTTP: fastify with schema-checked JSON bodies, `/openapi.json`,
 * `/health`, Prometheus `/metrics`, a server span per request continuing the caller's
 * `traceparent`, body, time and concurrency limits, JSON errors and a graceful stop. A caller of the same process
 * may POST to it in memory (`post`, LocalHttpServer) through the same limits, span, metrics, checks and error bodies.
 */
export class SkillServer implements LocalHttpServer {
  private readonly lifecycle: Lifecycle<SkillServerState>;
  private readonly app: FastifyInstance;
  private readonly tracer: Tracer;
  private readonly meterProvider: MeterProvider;
  private readonly prometheus: PrometheusExporter;
  private readonly requests = new WeakMap<FastifyRequest, RequestState>();
  /** The text of each JSON body, as read, until its request is gone. */
  private readonly bodyTexts = new WeakMap<FastifyRequest, string>();
  private readonly duration: Histogram;
  private readonly rejected: Counter;
  /** fastify's own JSON parser (prototype-poisoning checks), shared by both ways in. */
  private parseJson: JsonParser | undefined;
  /** The plugin instance the routes are registered in: its validator compiler is the one their schemas were compiled with. */
  private routeScope: FastifyInstance | undefined;
  /** The routes' JSON body checks for in-memory calls. */
  private readonly bodyChecks = new BodyChecks(() => this.routeScope?.validatorCompiler);
  private inFlight = 0;
  private boundPort = 0;
  private readonly stopOnce = new ShutdownOnce(() => this.shutdown());

  constructor(
    readonly definition: SkillDefinition,
    private readonly options: SkillServerOptions,
  ) {
    this.lifecycle = new Lifecycle(`skill server ${definition.name}`, TRANSITIONS, 'created');
    this.tracer = options.tracer ?? trace.getTracer('@loom/skill-service-kit');
    this.prometheus = new PrometheusExporter({ preventServerStart: true });
    this.meterProvider = new MeterProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: `loom-skill-${definition.name}` }),
      readers: [this.prometheus],
    });
    const meter = this.meterProvider.getMeter('@loom/skill-service-kit');
    this.duration = meter.createHistogram('http.server.request.duration', { unit: 's', description: 'Duration of HTTP requests to the skill service' });
    this.rejected = meter.createCounter('skill.requests.rejected', { description: 'Requests refused because the service was full' });
    meter
      .createObservableUpDownCounter('skill.requests.in_flight', { description: 'Requests being handled' })
      .addCallback((result) => result.observe(this.inFlight));
    this.app = this.build();
  }

  get state(): SkillServerState {
    return this.lifecycle.state;
  }

  /** The bound port, once running. */
  get port(): number {
    return this.boundPort;
  }

  /** The base URL, once running (`http://127.0.0.1:8085`). */
  get url(): string {
    const host = this.options.host === '0.0.0.0' || this.options.host === '::' ? '127.0.0.1' : this.options.host;
    return `http://${host.includes(':') ? `[${host}]` : host}:${this.boundPort}`;
  }

  /** Starts listening; resolves with the bound port. */
  async start(): Promise<number> {
    this.lifecycle.to('starting');
    try {
      await this.app.listen({ host: this.options.host, port: this.options.port });
    } catch (error) {
      this.lifecycle.to('stopping');
      await this.release();
      this.lifecycle.to('stopped');
      throw error;
    }
    this.boundPort = (this.app.server.address() as AddressInfo).port;
    this.lifecycle.to('running');
    this.options.logger.info({ skill: this.definition.name, url: this.url, limits: this.options.limits }, 'skill service listening');
    return this.boundPort;
  }

  /** Stops taking requests, lets in-flight ones finish until the deadline, then closes everything. A second call waits for the first. */
  stop(): Promise<void> {
    return this.stopOnce.call();
  }

  private async shutdown(): Promise<void> {
    if (this.lifecycle.is('created')) {
      this.lifecycle.to('stopped');
      await this.release();
      return;
    }
    this.lifecycle.to('stopping');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), this.options.shutdownDeadlineMs);
    });
    const closed = this.app.close().then(() => 'closed' as const);
    const outcome = await Promise.race([closed, deadline]);
    clearTimeout(timer);
    if (outcome === 'deadline') {
      this.options.logger.warn({ skill: this.definition.name, inFlight: this.inFlight }, 'shutdown deadline passed; closing open connections');
      this.app.server.closeAllConnections();
      await closed;
    }
    await this.release();
    this.lifecycle.to('stopped');
    this.options.logger.info({ skill: this.definition.name }, 'skill service stopped');
  }

  private async release(): Promise<void> {
    const results = await Promise.allSettled([this.definition.close?.() ?? Promise.resolve(), this.meterProvider.shutdown()]);
    for (const result of results) {
      if (result.status === 'rejected')
        this.options.logger.error({ err: result.reason as unknown, skill: this.definition.name }, 'closing the skill service failed');
    }
  }

  private build(): FastifyInstance {
    const app = this.createApp();
    this.addRequestHook(app);
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const answer = errorAnswer(error, { mediaType: mediaTypeOf(request), bodyLimitBytes: this.options.limits.bodyLimitBytes, logger: request.log as Logger });
      void reply.code(answer.status);
      if (answer.retryAfterSeconds !== undefined) void reply.header('retry-after', String(answer.retryAfterSeconds));
      void reply.send(answer.body);
    });
    app.setNotFoundHandler((request, reply) => {
      void reply.code(404).send({ error: 'not_found', message: `no endpoint ${request.method} ${request.url.split('?')[0]}` } satisfies SkillErrorBody);
    });
    this.addRoutes(app);
    return app;
  }

  /** Fastify with the skill's logger, body limit and JSON settings. */
  private createApp(): FastifyInstance {
    const { limits, logger } = this.options;
    // typed as fastify's logger, which is narrower than pino's, so the instance's type is the default one
    const loggerInstance: FastifyBaseLogger = logger.child({ skill: this.definition.name });
    const app = Fastify({
      loggerInstance,
      // one line per request is written by the close handler of the request hook, with route, status and duration
      logController: new LogController({ disableRequestLogging: true }),
      bodyLimit: limits.bodyLimitBytes,
      requestTimeout: Math.max(10_000, limits.timeLimitMs),
      return503OnClosing: true,
      ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false } },
    });
    // answers are plain JSON: the response schemas document, they do not filter
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
    // fastify's own JSON parsing (with its prototype-poisoning checks), keeping the text as read for SkillRequest.text
    const parseJson = app.getDefaultJsonParser('error', 'error');
    this.parseJson = parseJson;
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, text, done) => {
      this.bodyTexts.set(request, text as string);
      void parseJson(request, text as string, done);
    });
    app.addContentTypeParser(['application/pdf', 'application/octet-stream'], { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    return app;
  }

  /** Every request gets a span, a duration and a log line; a limited one beyond the concurrency is answered 503. */
  private addRequestHook(app: FastifyInstance): void {
    app.addHook('onRequest', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const state = this.observe(request.method, request.url, route, request.headers);
      this.requests.set(request, state);
      reply.raw.once('close', () => this.finish(state, reply.raw.writableFinished ? reply.statusCode : 499, request.log as Logger));
      const busy = this.admit(state);
      if (busy !== undefined) {
        void reply.code(503).header('retry-after', String(busy.retryAfterSeconds)).send(busy.toBody());
        return;
      }
      done();
    });
  }

  /** Takes a place for a limited request; the 503 to answer when every place is taken. */
  private admit(state: RequestState): ServiceBusyError | undefined {
    if (!state.limited) return undefined;
    const { limits } = this.options;
    if (this.inFlight >= limits.concurrency) {
      state.limited = false;
      this.rejected.add(1, { 'http.route': state.route });
      return new ServiceBusyError('busy', `${this.definition.name} is handling ${limits.concurrency} requests; retry later`, limits.retryAfterSeconds);
    }
    this.inFlight += 1;
    return undefined;
  }

  /** Starts a request's server span (continuing the caller's traceparent); `finish` records its duration, status and log line. */
  private observe(method: string, url: string, route: string, headers: Readonly<Record<string, unknown>>, inProcess = false): RequestState {
    const parent = propagator.extract(context.active(), headers, headerGetter);
    const span = this.tracer.startSpan(
      `${method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': method,
          'url.path': url.split('?')[0] ?? url,
          'http.route': route,
          'loom.skill': this.definition.name,
          // the OpenTelemetry name of a call within one process
          ...(inProcess ? { 'network.transport': 'inproc' } : {}),
        },
      },
      parent,
    );
    const state: RequestState = {
      span,
      spanContext: trace.setSpan(parent, span),
      started: process.hrtime.bigint(),
      limited: !OPERATIONAL_PATHS.has(route) && route !== 'unmatched',
      method,
      route,
    };
    return state;
  }

  /** The end of a request: its place freed, its duration and status recorded, its span ended, its log line written. */
  private finish(state: RequestState, status: number, logger: Logger, inProcess = false): void {
    if (state.limited) this.inFlight -= 1;
    const { method, route, span } = state;
    const seconds = Number(process.hrtime.bigint() - state.started) / 1e9;
    this.duration.record(seconds, { 'http.request.method': method, 'http.route': route, 'http.response.status_code': status });
    span.setAttribute('http.response.status_code', status);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
    logger.info({ method, route, status, durationMs: Math.round(seconds * 1000), ...(inProcess ? { inProcess } : {}) }, 'request');
  }

  /** The skill's routes, `/health`, `/metrics` and `/openapi.json`. */
  private addRoutes(app: FastifyInstance): void {
    const { limits } = this.options;
    void app.register(fastifySwagger, {
      openapi: {
        openapi: '3.0.3',
        info: { title: this.definition.title, description: this.definition.description, version: this.definition.version },
      },
    });
    void app.register((instance, _options, done) => {
      this.routeScope = instance;
      for (const route of this.definition.routes) this.addRoute(instance, route);
      instance.get('/health', { schema: { hide: true } }, (_request, reply) => {
        const running = this.lifecycle.is('running');
        void reply.code(running ? 200 : 503).send({
          status: running ? 'UP' : 'DOWN',
          skill: this.definition.name,
          version: this.definition.version,
          inFlight: this.inFlight,
          concurrency: limits.concurrency,
          ...this.definition.health?.(),
        });
      });
      instance.get('/metrics', { schema: { hide: true } }, (request, reply) => {
        void reply.hijack();
        this.prometheus.getMetricsRequestHandler(request.raw, reply.raw);
      });
      instance.get('/openapi.json', { schema: { hide: true } }, (_request, reply) => {
        void reply.send(instance.swagger());
      });
      done();
    });
  }

  private addRoute(app: FastifyInstance, route: SkillRoute): void {
    const consumes = route.consumes ?? ['application/json'];
    const errorCodes = [...new Set([400, 413, 415, 503, ...(route.errors ?? [])])].sort();
    const response: Record<string, JsonSchema> = { 200: route.response };
    for (const code of errorCodes) response[code] = { ...ERROR_SCHEMA, description: ERROR_DESCRIPTIONS[code] ?? 'error' };
    app.route({
      method: route.method,
      url: route.path,
      schema: {
        summary: route.summary,
        ...(route.description === undefined ? {} : { description: route.description }),
        consumes: [...consumes],
        // only a JSON body is schema-checked; a route that also reads binary bodies gets those as a Buffer
        ...(route.body === undefined ? {} : { body: consumes.length === 1 ? route.body : { content: { 'application/json': { schema: route.body } } } }),
        response,
      },
      preValidation: (request, _reply, done) => {
        const mediaType = mediaTypeOf(request);
        if (route.method === 'POST' && !consumes.includes(mediaType)) {
          done(new UnsupportedMediaTypeError(`${route.path} reads ${consumes.join(' or ')}, got ${mediaType === '' ? 'no Content-Type' : mediaType}`));
          return;
        }
        done();
      },
      handler: async (request, reply) => {
        // the onRequest hook records every request before a handler can run
        const state = this.requests.get(request)!;
        const text = this.bodyTexts.get(request);
        const input = { body: request.body, ...(text === undefined ? {} : { text }), mediaType: mediaTypeOf(request), logger: request.log as Logger };
        const answer = await context.with(state.spanContext, () =>
          this.runHandler(route, input, state.span, (abort) => {
            const gone = (): void => {
              if (!request.raw.complete || !request.raw.socket.writable) abort();
            };
            request.raw.socket.once('close', gone);
            return () => request.raw.socket.off('close', gone);
          }),
        );
        if (!(answer instanceof JsonText)) return answer;
        // a string with a JSON media type is sent as it is
        void reply.type('application/json; charset=utf-8');
        return answer.text;
      },
    });
  }

  /**
   * Runs a route's handler under its time limit; aborted (503) at the limit or when `watchGone` finds the caller gone.
   * `watchGone` starts watching and answers how to stop.
   */
  private async runHandler(
    route: SkillRoute,
    input: Omit<SkillRequest, 'signal' | 'span'>,
    span: Span,
    watchGone: (abort: () => void) => () => void,
  ): Promise<unknown> {
    const { timeLimitMs, retryAfterSeconds } = this.options.limits;
    const controller = new AbortController();
    // the error is made when the time is up, not for every request (an Error's stack costs)
    const timer = setTimeout(
      () => controller.abort(new ServiceBusyError('time_limit', `the request took longer than ${timeLimitMs} ms`, retryAfterSeconds)),
      timeLimitMs,
    );
    const unwatch = watchGone(() => controller.abort(new ServiceBusyError('client_gone', 'the caller closed the connection')));
    try {
      const work = route.handler({ ...input, signal: controller.signal, span });
      const aborted = new Promise<never>((_resolve, reject) => {
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason as Error), { once: true });
      });
      // the handler is told through the signal; the answer does not wait for it to notice
      work.catch(() => undefined);
      return await Promise.race([work, aborted]);
    } finally {
      clearTimeout(timer);
      unwatch();
    }
  }

  /**
   * A POST in memory (LocalHttpServer), for a caller of this process: the route's concurrency, body and time limits, its
   * server span, duration metric and log line, fastify's JSON parser and the route's schema check, and the error bodies,
   * as over the socket, without the socket and HTTP's framing. Rejects with the caller's abort reason once its signal
   * aborts, as a closed connection gets no answer.
   */
  async post(request: LocalHttpRequest): Promise<LocalHttpAnswer> {
    const path = request.path.split('?')[0] ?? request.path;
    const route = this.definition.routes.find((candidate) => candidate.method === 'POST' && candidate.path === path);
    const state = this.observe('POST', request.path, route?.path ?? 'unmatched', request.headers, true);
    const logger = this.app.log as Logger;
    let answer: LocalHttpAnswer;
    try {
      answer = await context.with(state.spanContext, () => this.answerInMemory(request, path, route, state, logger));
    } catch (error) {
      this.finish(state, 499, logger, true);
      throw error;
    }
    if (request.signal.aborted) {
      this.finish(state, 499, logger, true);
      throw request.signal.reason;
    }
    this.finish(state, answer.status, logger, true);
    return answer;
  }

  private async answerInMemory(
    request: LocalHttpRequest,
    path: string,
    route: SkillRoute | undefined,
    state: RequestState,
    logger: Logger,
  ): Promise<LocalHttpAnswer> {
    const { limits } = this.options;
    // over the socket a stopping server answers 503 on kept-alive connections and refuses new ones: both are retried
    if (!this.lifecycle.is('running')) return errorAnswerOf(new ServiceBusyError('stopping', `${this.definition.name} is stopping`, limits.retryAfterSeconds));
    if (route === undefined) return jsonAnswer(404, { error: 'not_found', message: `no endpoint POST ${path}` } satisfies SkillErrorBody);
    const busy = this.admit(state);
    if (busy !== undefined) return errorAnswerOf(busy);
    const mediaType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    try {
      // fastify's order: the media type's parser, the body limit, the parse, preValidation's media type, the schema
      if (!BODY_TYPES.has(mediaType)) throw new UnsupportedMediaTypeError(`no endpoint here reads ${mediaType || 'a body without Content-Type'}`);
      if (request.body.byteLength > limits.bodyLimitBytes) throw new PayloadTooLargeError(`the body is larger than ${limits.bodyLimitBytes} bytes`);
      const bytes = Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength);
      const text = mediaType === 'application/json' ? bytes.toString('utf8') : undefined;
      // a binary body is copied: the handler never shares memory with its caller, as over a socket
      const body =
        text !== undefined ? parseJsonBody(this.parseJson as JsonParser, text) : mediaType === 'text/plain' ? bytes.toString('utf8') : Buffer.from(bytes);
      const consumes = route.consumes ?? ['application/json'];
      if (!consumes.includes(mediaType)) throw new UnsupportedMediaTypeError(`${route.path} reads ${consumes.join(' or ')}, got ${mediaType}`);
      if (text !== undefined) this.bodyChecks.check(route, body);
      const value = await this.runHandler(route, { body, ...(text === undefined ? {} : { text }), mediaType, logger }, state.span, (abort) => {
        if (request.signal.aborted) abort();
        request.signal.addEventListener('abort', abort, { once: true });
        return () => request.signal.removeEventListener('abort', abort);
      });
      return valueAnswer(value);
    } catch (error) {
      return errorAnswerOf(errorAnswer(error as FastifyError, { mediaType, bodyLimitBytes: limits.bodyLimitBytes, logger }));
    }
  }
}

function mediaTypeOf(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** Builds a skill server and starts it; resolves once it listens. */
export async function startSkillServer(definition: SkillDefinition, options: SkillServerOptions): Promise<SkillServer> {
  const server = new SkillServer(definition, options);
  await server.start();
  return server;
}
