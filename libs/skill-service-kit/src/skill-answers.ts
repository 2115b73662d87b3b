import { type LocalHttpAnswer } from '@loom/foundation';
import { type Logger } from '@loom/telemetry';
import { type FastifyError, type FastifyInstance, type FastifyRequest, type FastifySchemaCompiler } from 'fastify';
import { ServiceBusyError, SkillError, type SkillErrorBody } from './errors.js';
import { type JsonSchema, JsonText, type SkillRoute } from './skill-definition.js';
import { type SchemaViolation, validationField } from './validation-field.js';

/** The schema of every error body, for the OpenAPI document. */
export const ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: { type: 'string', description: 'stable code, e.g. invalid_request, unknown_pipeline, busy' },
    message: { type: 'string' },
    field: { type: 'string', description: 'JSON path of the request field at fault' },
  },
};

/** What each error status means, for the OpenAPI document. */
export const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'the request breaks its schema or a rule of the endpoint; `field` names the part',
  404: 'a named thing does not exist',
  413: 'the body, or a document it names, is over a size limit',
  415: 'the body is of a media type the endpoint does not read',
  422: 'the content cannot be processed',
  503: 'too many requests at once, the time limit passed, or the service is stopping; see Retry-After',
};

/** The media types a skill server reads a body of (fastify's text/plain among them); any other is refused before a route sees it (415). */
export const BODY_TYPES = new Set(['application/json', 'text/plain', 'application/pdf', 'application/octet-stream']);

/** An answer as the error handler makes it: status, Retry-After, and the JSON body. */
export interface ErrorAnswer {
  readonly status: number;
  readonly retryAfterSeconds?: number;
  readonly body: SkillErrorBody;
}

/** fastify's JSON parser (getDefaultJsonParser). */
export type JsonParser = ReturnType<FastifyInstance['getDefaultJsonParser']>;

/** A JSON body parsed by fastify's own parser, which throws its own errors (400), as over the socket. */
export function parseJsonBody(parser: JsonParser, text: string): unknown {
  let parsed: unknown;
  let failure: unknown;
  // the default parser reads no request and answers at once
  void parser(undefined as unknown as FastifyRequest, text, (error: unknown, value: unknown) => {
    failure = error;
    parsed = value;
  });
  if (failure !== null && failure !== undefined) throw failure as Error;
  return parsed;
}

/** The status, Retry-After and body of a failed request, the same over the socket and in memory. */
export function errorAnswer(error: FastifyError, request: { mediaType: string; bodyLimitBytes: number; logger: Logger }): ErrorAnswer {
  if (error instanceof SkillError) {
    return { status: error.status, ...(error instanceof ServiceBusyError ? { retryAfterSeconds: error.retryAfterSeconds } : {}), body: error.toBody() };
  }
  if (error.validation !== undefined && error.validation.length > 0) {
    const first = error.validation[0]!;
    const field = validationField(first);
    return {
      status: 400,
      body: { error: 'invalid_request', message: `${field === '' ? 'body' : field} ${first.message ?? 'is invalid'}`, ...(field === '' ? {} : { field }) },
    };
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: { error: 'payload_too_large', message: `the body is larger than ${request.bodyLimitBytes} bytes` } };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        status: 415,
        body: { error: 'unsupported_media_type', message: `no endpoint here reads ${request.mediaType || 'a body without Content-Type'}` },
      };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, body: { error: 'invalid_request', message: error.message } };
  }
  if (error instanceof SyntaxError || (error.statusCode === 400 && error.code === undefined)) {
    return { status: 400, body: { error: 'invalid_request', message: `the body is not valid JSON: ${error.message}` } };
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return { status: error.statusCode, body: { error: 'invalid_request', message: error.message } };
  }
  request.logger.error({ err: error }, 'unexpected failure');
  return { status: 500, body: { error: 'internal', message: 'the skill failed unexpectedly; the service log has the detail' } };
}

const JSON_UTF8 = 'application/json; charset=utf-8';

/** A JSON answer in memory. */
export function jsonAnswer(status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): LocalHttpAnswer {
  return { status, headers: { 'content-type': JSON_UTF8, ...headers }, body: Buffer.from(JSON.stringify(body)) };
}

/** A failure's answer in memory, with Retry-After when it has one. */
export function errorAnswerOf(error: ErrorAnswer | SkillError): LocalHttpAnswer {
  if (error instanceof SkillError) {
    return jsonAnswer(error.status, error.toBody(), error instanceof ServiceBusyError ? { 'retry-after': String(error.retryAfterSeconds) } : {});
  }
  return jsonAnswer(error.status, error.body, error.retryAfterSeconds === undefined ? {} : { 'retry-after': String(error.retryAfterSeconds) });
}

/** A handler's answer in memory as fastify sends it: JsonText as it is, a Buffer as bytes, a string as text, anything else as JSON. */
export function valueAnswer(value: unknown): LocalHttpAnswer {
  if (value instanceof JsonText) return { status: 200, headers: { 'content-type': JSON_UTF8 }, body: Buffer.from(value.text) };
  if (Buffer.isBuffer(value)) return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from(value) };
  if (typeof value === 'string') return { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: Buffer.from(value) };
  return { status: 200, headers: { 'content-type': JSON_UTF8 }, body: Buffer.from(JSON.stringify(value) ?? '') };
}

/** A JSON body's schema check, as fastify's ajv compiles it: false with its violations on `errors`. */
interface BodyValidator {
  (body: unknown): boolean;
  errors?: SchemaViolation[] | null;
}

/** Each route's JSON body check for in-memory calls, compiled at its first call by the compiler fastify compiled the route's schema with. */
export class BodyChecks {
  private readonly validators = new Map<SkillRoute, BodyValidator>();

  constructor(private readonly compiler: () => FastifySchemaCompiler<unknown> | undefined) {}

  /** Throws a validation error (fastify's shape: `validation`, 400) when the body breaks its route's schema; fills in its defaults. */
  check(route: SkillRoute, body: unknown): void {
    if (route.body === undefined) return;
    let validate = this.validators.get(route);
    if (validate === undefined) {
      const compiler = this.compiler();
      if (compiler === undefined) throw new TypeError(`no validator compiler for ${route.path}: the server has not started`);
      validate = compiler({ schema: route.body, method: route.method, url: route.path, httpPart: 'body' }) as BodyValidator;
      this.validators.set(route, validate);
    }
    if (validate(body)) return;
    throw Object.assign(new Error('the body breaks its schema'), { validation: validate.errors ?? [], validationContext: 'body' });
  }
}
