import { type IncomingMessage, type ServerResponse } from 'node:http';
import { type ErrorKind, LoomError } from '@loom/foundation';

/** An answer of the console's API that is an error: its HTTP status, a message for the user, and the field at fault. */
export class ApiError extends LoomError {
  readonly kind: ErrorKind;

  constructor(
    readonly status: number,
    message: string,
    readonly field?: string,
    options: { readonly cause?: unknown } = {},
  ) {
    super(message, { retryable: status === 502 || status === 503, ...(options.cause === undefined ? {} : { cause: options.cause }) });
    this.name = 'ApiError';
    this.kind = kindOf(status);
  }
}

function kindOf(status: number): ErrorKind {
  if (status === 401) return 'unauthenticated';
  if (status === 403) return 'permission-denied';
  if (status === 404) return 'not-found';
  if (status === 409) return 'failed-precondition';
  if (status === 413 || status === 429) return 'resource-exhausted';
  if (status === 501) return 'unimplemented';
  if (status === 504) return 'deadline-exceeded';
  if (status >= 500) return 'unavailable';
  return 'invalid-argument';
}

/** The headers every answer carries: a strict Content-Security-Policy (scripts, styles and connections to this origin only) and no sniffing or framing. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

/** Sends a JSON answer (no store: an API answer is never cached). */
export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string | string[]>> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(text);
}

/** Sends 204 with the given headers. */
export function sendNoContent(response: ServerResponse, headers: Readonly<Record<string, string | string[]>> = {}): void {
  response.writeHead(204, { ...SECURITY_HEADERS, 'cache-control': 'no-store', ...headers });
  response.end();
}

/** Sends `{error:{status,message,field?}}`. */
export function sendError(response: ServerResponse, error: ApiError, headers: Readonly<Record<string, string | string[]>> = {}): void {
  sendJson(
    response,
    error.status,
    { error: { status: error.status, message: error.message, ...(error.field === undefined ? {} : { field: error.field }) } },
    headers,
  );
}

/**
 * The request's body as JSON: 413 past `maxBytes` (the rest is not read), 415 when it is not declared JSON, 400 when it
 * is not JSON or not an object. An empty body is `{}`.
 */
export async function readJsonBody(request: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > maxBytes) throw new ApiError(413, `the request body is larger than ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new ApiError(413, `the request body is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  if (size === 0) return {};
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type)) throw new ApiError(415, 'the request body must be JSON (Content-Type: application/json)');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (error) {
    throw new ApiError(400, `the request body is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ApiError(400, 'the request body must be a JSON object');
  return value as Record<string, unknown>;
}

/** A required non-empty string field of a body; 400 naming the field otherwise. */
export function stringField(body: Readonly<Record<string, unknown>>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value.trim() === '') throw new ApiError(400, `${field} must be a non-empty string`, field);
  return value;
}

/** A required list of non-empty strings (1 to `max`); 400 naming the field (and the item) otherwise. */
export function stringListField(body: Readonly<Record<string, unknown>>, field: string, max: number): string[] {
  const value = body[field];
  if (!Array.isArray(value) || value.length === 0) throw new ApiError(400, `${field} must be a non-empty list of strings`, field);
  if (value.length > max) throw new ApiError(400, `${field} holds ${value.length} items; at most ${max}`, field);
  value.forEach((item: unknown, index) => {
    if (typeof item !== 'string' || item === '') throw new ApiError(400, `${field}[${index}] must be a non-empty string`, `${field}[${index}]`);
  });
  return value as string[];
}
