import { type AddressInfo } from 'node:net';
import { context, type Context, type Histogram, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import fastifySwagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Lifecycle, ShutdownOnce, type TransitionTable } from '@loom/foundation';
import { type Logger } from '@loom/telemetry';
import { ServiceBusyError, SkillError, type SkillErrorBody, UnsupportedMediaTypeError } from './errors.js';
import { type JsonSchema, JsonText, type SkillDefinition, type SkillRoute } from './skill-definition.js';
import { validationField } from './validation-field.js';

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

const ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: { type: 'string', description: 'stable code, e.g. invalid_request, unknown_pipeline, busy' },
    message: { type: 'string' },
    field: { type: 'string', description: 'JSON path of the request field at fault' },
  },
};

const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'the request breaks its schema or a rule of the endpoint; `field` names the part',
  404: 'a named thing does not exist',
  413: 'the body, or a document it names, is over a size limit',
  415: 'the body is of a media type the endpoint does not read',
  422: 'the content cannot be processed',
  503: 'too many requests at once, the time limit passed, or the service is stopping; see Retry-After',
};

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
}

/**
 * One skill service over HTTP: fastify with schema-checked JSON bodies, `/openapi.json`,
 * `/health`, Prometheus `/metrics`, a server span per request continuing the caller's
 * `traceparent`, body, time and concurrency limits, JSON errors and a graceful stop.
 */
export class SkillServer {
  private readonly lifecycle: Lifecycle<SkillServerState>;
  private readonly app: FastifyInstance;
  private readonly tracer: Tracer;
  private readonly meterProvider: MeterProvider;
  private readonly prometheus: PrometheusExporter;
  private readonly requests = new WeakMap<FastifyRequest, RequestState>();
  /** The text of each JSON body, as read, until its request is gone. */
  private readonly bodyTexts = new WeakMap<FastifyRequest, string>();
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
      const body = this.errorBody(error, request, reply);
      void reply.send(body);
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
    const { limits } = this.options;
    const meter = this.meterProvider.getMeter('@loom/skill-service-kit');
    const duration = meter.createHistogram('http.server.request.duration', { unit: 's', description: 'Duration of HTTP requests to the skill service' });
    const rejected = meter.createCounter('skill.requests.rejected', { description: 'Requests refused because the service was full' });
    meter
      .createObservableUpDownCounter('skill.requests.in_flight', { description: 'Requests being handled' })
      .addCallback((result) => result.observe(this.inFlight));

    app.addHook('onRequest', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const state = this.observe(request, reply, route, duration);
      if (state.limited) {
        if (this.inFlight >= limits.concurrency) {
          state.limited = false;
          rejected.add(1, { 'http.route': route });
          const busy = new ServiceBusyError(
            'busy',
            `${this.definition.name} is handling ${limits.concurrency} requests; retry later`,
            limits.retryAfterSeconds,
          );
          void reply.code(503).header('retry-after', String(busy.retryAfterSeconds)).send(busy.toBody());
          return;
        }
        this.inFlight += 1;
      }
      done();
    });
  }

  /** Starts a request's server span (continuing the caller's traceparent); its end records the duration, the status and the log line. */
  private observe(request: FastifyRequest, reply: FastifyReply, route: string, duration: Histogram): RequestState {
    const parent = propagator.extract(context.active(), request.headers, headerGetter);
    const span = this.tracer.startSpan(
      `${request.method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'url.path': request.url.split('?')[0] ?? request.url,
          'http.route': route,
          'loom.skill': this.definition.name,
        },
      },
      parent,
    );
    const state: RequestState = {
      span,
      spanContext: trace.setSpan(parent, span),
      started: process.hrtime.bigint(),
      limited: !OPERATIONAL_PATHS.has(route) && route !== 'unmatched',
    };
    this.requests.set(request, state);
    reply.raw.once('close', () => {
      if (state.limited) this.inFlight -= 1;
      const status = reply.raw.writableFinished ? reply.statusCode : 499;
      const seconds = Number(process.hrtime.bigint() - state.started) / 1e9;
      duration.record(seconds, { 'http.request.method': request.method, 'http.route': route, 'http.response.status_code': status });
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      request.log.info({ method: request.method, route, status, durationMs: Math.round(seconds * 1000) }, 'request');
    });
    return state;
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
        const answer = await context.with(state.spanContext, () => this.runHandler(route, request, state.span));
        if (!(answer instanceof JsonText)) return answer;
        // a string with a JSON media type is sent as it is
        void reply.type('application/json; charset=utf-8');
        return answer.text;
      },
    });
  }

  private async runHandler(route: SkillRoute, request: FastifyRequest, span: Span): Promise<unknown> {
    const { timeLimitMs, retryAfterSeconds } = this.options.limits;
    const controller = new AbortController();
    const timeUp = new ServiceBusyError('time_limit', `the request took longer than ${timeLimitMs} ms`, retryAfterSeconds);
    const timer = setTimeout(() => controller.abort(timeUp), timeLimitMs);
    const gone = (): void => {
      if (!request.raw.complete || !request.raw.socket.writable) controller.abort(new ServiceBusyError('client_gone', 'the caller closed the connection'));
    };
    request.raw.socket.once('close', gone);
    try {
      const text = this.bodyTexts.get(request);
      const work = route.handler({
        body: request.body,
        ...(text === undefined ? {} : { text }),
        mediaType: mediaTypeOf(request),
        signal: controller.signal,
        logger: request.log as Logger,
        span,
      });
      const aborted = new Promise<never>((_resolve, reject) => {
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason as Error), { once: true });
      });
      // the handler is told through the signal; the answer does not wait for it to notice
      work.catch(() => undefined);
      return await Promise.race([work, aborted]);
    } finally {
      clearTimeout(timer);
      request.raw.socket.off('close', gone);
    }
  }

  private errorBody(error: FastifyError, request: FastifyRequest, reply: FastifyReply): SkillErrorBody {
    if (error instanceof SkillError) {
      void reply.code(error.status);
      if (error instanceof ServiceBusyError) void reply.header('retry-after', String(error.retryAfterSeconds));
      return error.toBody();
    }
    if (error.validation !== undefined && error.validation.length > 0) {
      void reply.code(400);
      const first = error.validation[0]!;
      const field = validationField(first);
      return { error: 'invalid_request', message: `${field === '' ? 'body' : field} ${first.message ?? 'is invalid'}`, ...(field === '' ? {} : { field }) };
    }
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        void reply.code(413);
        return { error: 'payload_too_large', message: `the body is larger than ${this.options.limits.bodyLimitBytes} bytes` };
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        void reply.code(415);
        return { error: 'unsupported_media_type', message: `no endpoint here reads ${mediaTypeOf(request) || 'a body without Content-Type'}` };
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        void reply.code(400);
        return { error: 'invalid_request', message: error.message };
    }
    if (error instanceof SyntaxError || (error.statusCode === 400 && error.code === undefined)) {
      void reply.code(400);
      return { error: 'invalid_request', message: `the body is not valid JSON: ${error.message}` };
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      void reply.code(error.statusCode);
      return { error: 'invalid_request', message: error.message };
    }
    request.log.error({ err: error }, 'unexpected failure');
    void reply.code(500);
    return { error: 'internal', message: 'the skill failed unexpectedly; the service log has the detail' };
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
