import { attemptSignal } from '@loom/foundation';
import { ValidationError } from '@loom/domain';
import fetch, { FetchError } from 'node-fetch';
import { type ComponentContext, type ComponentFactory, type LoomMessage, type Outcome, outcome, type Processor } from '../runtime/component.js';
import { TRACE_HEADERS } from '../runtime/tracing.js';
import { fillTemplate, PLACEHOLDER } from './message-template.js';

/** HTTP methods the enricher may use. */
export const ENRICHER_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type Method = (typeof ENRICHER_METHODS)[number];

/** An HTTP header name (an RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** How the enricher calls its endpoint, parsed from the options once. */
export interface EnricherSettings {
  readonly url: string;
  readonly method: Method;
  readonly targetField: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

/**
 * A processor that calls an HTTP endpoint per message (the URL a template over body fields; for
 * methods other than GET the body is sent as JSON) and puts the parsed JSON answer into
 * `target_field`. Network errors, time-outs, 429 and 5xx are transient failures (the runtime
 * retries them); other answers that are not 2xx JSON fail for good.
 */
export const enricherFactory: ComponentFactory = {
  kind: 'processor',
  // a bad option rejects the promise rather than throwing from create
  create: (context) => new Promise<Processor>((resolve) => resolve(new Enricher(enricherSettings(context)))),
};

/** The enricher's settings from its options; a bad value is a ValidationError naming the option. */
export function enricherSettings(context: ComponentContext): EnricherSettings {
  const field = (name: string): string => `${context.name}.options.${name}`;
  const url = context.options.optionalString('url');
  if (url === undefined || url === '') throw ValidationError.of(field('url'), 'is required', 'REQUIRED');
  let probe: URL | undefined;
  try {
    probe = new URL(url.replace(PLACEHOLDER, 'x'));
  } catch {
    probe = undefined;
  }
  if (probe === undefined || (probe.protocol !== 'http:' && probe.protocol !== 'https:')) {
    throw ValidationError.of(field('url'), 'must be an absolute http or https URL (placeholders aside)', 'INVALID_VALUE');
  }
  const method = context.options.string('method').toUpperCase();
  if (!isMethod(method)) throw ValidationError.of(field('method'), `must be one of ${ENRICHER_METHODS.join(', ')}`, 'INVALID_VALUE');
  const targetField = context.options.string('target_field');
  if (targetField === '') throw ValidationError.of(field('target_field'), 'must not be empty', 'INVALID_VALUE');
  const timeoutMs = context.options.integer('timeout');
  if (timeoutMs < 1) throw ValidationError.of(field('timeout'), 'must be at least 1 ms', 'OUT_OF_RANGE');
  return { url, method, targetField, headers: headersOf(context.options.json('headers'), field('headers')), timeoutMs };
}

class Enricher implements Processor {
  constructor(private readonly settings: EnricherSettings) {}

  process(batch: readonly LoomMessage[], signal: AbortSignal): Promise<readonly Outcome[]> {
    return Promise.all(batch.map((message) => this.enrich(message, signal)));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private async enrich(message: LoomMessage, signal: AbortSignal): Promise<Outcome> {
    const { method, targetField, timeoutMs } = this.settings;
    const url = fillTemplate(this.settings.url, message.body, 'the URL template', encodeURIComponent);
    if (!url.ok) return outcome.fail(url.error);
    // failure texts leave out the query string and credentials, which may carry keys
    const call = `${method} ${withoutQuery(url.value)}`;
    const headers: Record<string, string> = { accept: 'application/json', ...lowerCased(this.settings.headers) };
    // the message's trace context goes on, so the service's spans join the message's trace
    for (const name of TRACE_HEADERS) {
      const value = message.headers[name];
      if (value !== undefined) headers[name] = value;
    }
    let requestBody: string | undefined;
    if (method !== 'GET') {
      requestBody = JSON.stringify(message.body);
      headers['content-type'] ??= 'application/json';
    }
    let status: number;
    let text: string;
    const attempt = attemptSignal(signal, timeoutMs);
    try {
      const response = await fetch(url.value, { method, headers, body: requestBody, signal: attempt.signal });
      status = response.status;
      text = await response.text();
      if (status === 429 || status >= 500) return outcome.fail(`${call} answered ${status} ${response.statusText}`.trimEnd(), true);
      if (!response.ok) return outcome.fail(`${call} answered ${status} ${response.statusText}`.trimEnd());
    } catch (error) {
      if (attempt.timedOut()) return outcome.fail(`${call} timed out after ${timeoutMs} ms`, true);
      if (signal.aborted) return outcome.fail(`${call} was cancelled`, true);
      return outcome.fail(`${call} failed: ${reasonOf(error)}`, true);
    } finally {
      attempt.release();
    }
    let answer: unknown = null;
    if (status !== 204) {
      try {
        answer = JSON.parse(text);
      } catch {
        return outcome.fail(`${call} answered ${status} with a body that is not JSON`);
      }
    }
    return outcome.emit({ id: message.id, headers: message.headers, body: { ...message.body, [targetField]: answer } });
  }
}

function withoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return url.split(/[?#]/, 1)[0] ?? url;
  }
}

/** Why a call failed, without node-fetch's message (it quotes the whole URL, query string included). */
function reasonOf(error: unknown): string {
  if (error instanceof FetchError) return error.code ?? error.type;
  if (error instanceof Error) return 'code' in error && typeof error.code === 'string' ? error.code : error.name;
  return 'unknown error';
}

function headersOf(value: unknown, field: string): Record<string, string> {
  if (value === undefined || value === null || value === '') return {};
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value) as unknown;
    } catch {
      throw ValidationError.of(field, 'must be a JSON object of string values', 'INVALID_VALUE');
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw ValidationError.of(field, 'must be a JSON object of string values', 'INVALID_VALUE');
  }
  const headers: Record<string, string> = {};
  for (const [name, headerValue] of Object.entries(parsed)) {
    // errors name the header only: values may be secrets
    if (!HEADER_NAME.test(name)) throw ValidationError.of(field, `'${name}' is not a valid header name`, 'INVALID_VALUE');
    if (typeof headerValue !== 'string') throw ValidationError.of(field, `header '${name}' must have a string value`, 'INVALID_VALUE');
    if (/[\r\n\0]/.test(headerValue)) throw ValidationError.of(field, `the value of header '${name}' must not hold line breaks`, 'INVALID_VALUE');
    headers[name] = headerValue;
  }
  return headers;
}

function lowerCased(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

function isMethod(method: string): method is Method {
  return (ENRICHER_METHODS as readonly string[]).includes(method);
}
