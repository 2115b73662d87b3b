import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { attemptSignal } from '@loom/foundation';
import { type AddressPolicy } from './address-policy.js';
import { PayloadTooLargeError, SkillError, UnprocessableError } from './errors.js';

/** Limits of fetching a URL a workflow handed to a skill. */
export interface FetchLimits {
  /** Redirects followed at most; each one is checked like the first request. */
  readonly maxRedirects: number;
  /** Body bytes at most, after decompression. */
  readonly maxBytes: number;
  /** Time for the whole fetch, redirects included. */
  readonly timeoutMs: number;
}

/** What `safeFetch` needs besides the URL. */
export interface SafeFetchOptions {
  readonly policy: AddressPolicy;
  readonly limits: FetchLimits;
  /** Media types accepted (`text/html`); anything else is refused with 422. */
  readonly accept: readonly string[];
  /** JSON path of the request field that held the URL, named in every error. */
  readonly field: string;
  readonly signal?: AbortSignal;
  readonly userAgent?: string;
}

/** A fetched document. */
export interface FetchedDocument {
  /** The URL finally answered, after redirects. */
  readonly url: string;
  /** Media type, lower case, without parameters. */
  readonly mediaType: string;
  /** The `charset` parameter of Content-Type, when given. */
  readonly charset?: string;
  readonly body: Buffer;
}

const DEFAULT_USER_AGENT = 'loom-skill/0.1 (+https://github.com/loom)';

/**
 * GETs a URL without becoming a way into the network: every address connected to — after DNS,
 * on every redirect — must pass the policy; redirects, time, size and media type are capped.
 * Failures are SkillErrors naming `options.field`.
 */
export async function safeFetch(url: string, options: SafeFetchOptions): Promise<FetchedDocument> {
  // one timer for the whole fetch, redirects and body included, cleared once it is over
  const attempt = attemptSignal(options.signal ?? new AbortController().signal, options.limits.timeoutMs);
  const { signal } = attempt;
  let current = parseUrl(url, options.field);
  try {
    for (let redirects = 0; ; redirects += 1) {
      const response = await get(current, options, signal);
      const location = response.headers.location;
      if (response.statusCode !== undefined && response.statusCode >= 300 && response.statusCode < 400 && location !== undefined) {
        response.resume();
        if (redirects >= options.limits.maxRedirects) {
          throw new UnprocessableError('too_many_redirects', `more than ${options.limits.maxRedirects} redirects from ${url}`, { field: options.field });
        }
        current = parseUrl(new URL(location, current).href, options.field);
        continue;
      }
      return await readDocument(current, response, options, signal);
    }
  } catch (error) {
    if (error instanceof SkillError) throw error;
    if (attempt.timedOut()) {
      throw new UnprocessableError('fetch_timeout', `fetching ${url} took longer than ${options.limits.timeoutMs} ms`, { field: options.field, cause: error });
    }
    throw new UnprocessableError('fetch_failed', `could not fetch ${url}: ${describe(error)}`, { field: options.field, cause: error });
  } finally {
    attempt.release();
  }
}

function parseUrl(text: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UnprocessableError('invalid_url', `not a URL: ${text}`, { field });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UnprocessableError('invalid_url', `only http and https URLs are fetched, got ${url.protocol}`, { field });
  }
  return url;
}

/** The host name of a URL without IPv6 brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

function get(url: URL, options: SafeFetchOptions, signal: AbortSignal): Promise<IncomingMessage> {
  const host = hostOf(url);
  // a literal address is connected to without a lookup: check it here as well as on connect
  if (isIP(host) !== 0) options.policy.check(host, host, options.field);
  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    dnsLookup(hostname, { all: true, family: lookupOptions.family ?? 0 }, (error, addresses: LookupAddress[]) => {
      if (error !== null) return callback(error, '', 0);
      // a name with any refused address is refused whole: the connection could go to any of them
      const refused = addresses.find((entry) => !options.policy.allows(entry.address, hostname));
      if (refused !== undefined) {
        try {
          options.policy.check(refused.address, hostname, options.field);
        } catch (refusal) {
          return callback(refusal as NodeJS.ErrnoException, '', 0);
        }
      }
      if (lookupOptions.all === true) return (callback as unknown as (error: null, all: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (first === undefined) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(url, {
      method: 'GET',
      agent: false,
      lookup,
      signal,
      headers: {
        'user-agent': options.userAgent ?? DEFAULT_USER_AGENT,
        accept: `${options.accept.join(', ')};q=1, */*;q=0.1`,
        'accept-encoding': 'gzip, deflate, br',
      },
    });
    request.once('socket', (socket: Socket) => {
      // the address actually connected to decides, whatever resolved it
      socket.once('connect', () => {
        const address = socket.remoteAddress;
        if (address === undefined) return;
        try {
          options.policy.check(address, host, options.field);
        } catch (refusal) {
          request.destroy(refusal as Error);
        }
      });
    });
    request.once('response', resolve);
    request.once('error', (error) => reject(unwrapRefusal(error)));
    request.end();
  });
}

/** A refusal thrown inside the lookup reaches the request wrapped; hand it on as it is. */
function unwrapRefusal(error: Error): Error {
  if (error instanceof SkillError) return error;
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof SkillError ? cause : error;
}

async function readDocument(url: URL, response: IncomingMessage, options: SafeFetchOptions, signal: AbortSignal): Promise<FetchedDocument> {
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.resume();
    throw new UnprocessableError('fetch_failed', `${url.href} answered HTTP ${status}`, { field: options.field });
  }
  const contentType = response.headers['content-type'] ?? '';
  const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (!options.accept.includes(mediaType)) {
    response.resume();
    throw new UnprocessableError(
      'unsupported_content_type',
      `${url.href} is ${mediaType === '' ? 'of no stated type' : mediaType}; expected ${options.accept.join(' or ')}`,
      {
        field: options.field,
      },
    );
  }
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > options.limits.maxBytes) {
    response.destroy();
    throw tooLarge(url, options);
  }
  const body = await readLimited(decoded(response), options.limits.maxBytes, () => tooLarge(url, options), signal);
  const charset = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1]?.toLowerCase();
  return { url: url.href, mediaType, ...(charset === undefined ? {} : { charset }), body };
}

function tooLarge(url: URL, options: SafeFetchOptions): PayloadTooLargeError {
  return new PayloadTooLargeError(`${url.href} is larger than ${options.limits.maxBytes} bytes`, { field: options.field });
}

function decoded(response: IncomingMessage): Readable {
  const encoding = (response.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (encoding === 'gzip' || encoding === 'x-gzip') return response.pipe(createGunzip());
  if (encoding === 'deflate') return response.pipe(createInflate());
  if (encoding === 'br') return response.pipe(createBrotliDecompress());
  return response;
}

/** Reads a stream whole, failing as soon as it passes `maxBytes` (a decompression bomb stops there too). */
async function readLimited(stream: Readable, maxBytes: number, onTooLarge: () => Error, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    signal.throwIfAborted();
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > maxBytes) {
      stream.destroy();
      throw onTooLarge();
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, size);
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === undefined ? error.message : `${code} ${error.message}`;
  }
  return String(error);
}
