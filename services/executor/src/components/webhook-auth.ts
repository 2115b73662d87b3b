import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type IncomingMessage } from 'node:http';
import { FailedPreconditionError, ValidationError, WEBHOOK_AUTHENTICATION, WEBHOOK_MIN_TIMESTAMP_TOLERANCE_MS } from '@loom/domain';
import { type BearerCredentials, type CredentialRefusal, isCredentialRefusal, type Principal } from '@loom/service-kit';
import { type ComponentContext } from '../runtime/component.js';

/**
 * The request header of a signed webhook call: `X-Loom-Signature: sha256=<hex>`, the HMAC-SHA256 of the raw
 * body bytes under the webhook's shared secret, 64 hexadecimal digits (either case).
 */
export const WEBHOOK_SIGNATURE_HEADER = 'x-loom-signature';

/**
 * The request header of a signed webhook call's time: `X-Loom-Timestamp: <Unix seconds>`. With `signed_timestamp`
 * (the default) the signature covers `<timestamp>.` followed by the body, so a captured request cannot be sent again
 * once it is older than `timestamp_tolerance`, nor again within it (each accepted signature is remembered that long).
 */
export const WEBHOOK_TIMESTAMP_HEADER = 'x-loom-timestamp';

/** Most accepted signatures a webhook remembers to refuse their replay; past it the oldest are forgotten first. */
export const WEBHOOK_REMEMBERED_SIGNATURES = 65_536;

/** The permission a bearer token's identity needs to post to a webhook: the one PublishMessage needs (operator, admin). */
export const WEBHOOK_PERMISSION = 'operate';

const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;

/** Unix seconds, as senders write them: decimal digits only. */
const TIMESTAMP = /^[0-9]{1,12}$/;

/** What a webhook takes from loom's own settings: the bearer-token check of `loom.auth` and the certificate of `loom.tls`. */
export interface WebhookSecurity {
  /** The check of `loom.auth`'s static tokens and identity-provider tokens (built when a webhook first needs it). */
  readonly credentials: () => BearerCredentials;
  /** `loom.tls`'s certificate and key files when TLS is configured: every webhook then serves HTTPS with them. */
  readonly tls: { readonly certFile: string; readonly keyFile: string } | undefined;
}

/** How a signed webhook checks its callers' signatures (the `secret`, `signed_timestamp` and `timestamp_tolerance` options). */
export interface HmacAuthentication {
  readonly mode: 'hmac';
  readonly secret: Buffer;
  /** The signatures accepted in the last tolerance, to refuse a replay; undefined when the timestamp is not signed. */
  readonly replays: SeenSignatures | undefined;
  /** How far (ms) a request's timestamp may be from the webhook's clock, either way. */
  readonly toleranceMs: number;
}

/** How one webhook authenticates its callers (its `authentication` option). */
export type WebhookAuthentication = { readonly mode: 'bearer'; readonly credentials: BearerCredentials } | HmacAuthentication | { readonly mode: 'none' };

/** What a signed request's headers carry, to be checked against its body. */
export interface Signed {
  readonly signature: Buffer;
  /** `<timestamp>.`, signed before the body; empty when the timestamp is not signed. */
  readonly prefix: Buffer;
  /** When the signature stops being remembered (ms since the epoch): the timestamp plus the tolerance. */
  readonly expiresAt: number;
}

/** What the request's headers decide, before its body is read. */
export type Admission =
  /** Let in; with `signed`, only once the body matches its signature. */
  | { readonly admitted: true; readonly identity?: string; readonly signed?: Signed }
  /** Refused: the status to answer (401, 403, or 503 when the identity provider cannot be reached) and why, for the log only. */
  | { readonly admitted: false; readonly status: 401 | 403 | 503; readonly reason: string };

/** The webhook's authentication from its options: a mode of WEBHOOK_AUTHENTICATION, and for hmac the (opened) secret. */
export function webhookAuthentication(context: ComponentContext, security: WebhookSecurity): WebhookAuthentication {
  const mode = context.options.string('authentication');
  if (mode === 'none') return { mode };
  if (mode === 'bearer') return { mode, credentials: security.credentials() };
  if (mode === 'hmac') {
    const secret = context.options.optionalString('secret') ?? '';
    if (secret.trim() === '') {
      throw ValidationError.of(
        `${context.name}.options.secret`,
        'is required when authentication is hmac: a $$VARIABLE holding the shared secret',
        'MISSING_OPTION',
      );
    }
    const toleranceMs = context.options.integer('timestamp_tolerance');
    if (toleranceMs < WEBHOOK_MIN_TIMESTAMP_TOLERANCE_MS) {
      const field = `${context.name}.options.timestamp_tolerance`;
      throw ValidationError.of(field, `must be at least ${WEBHOOK_MIN_TIMESTAMP_TOLERANCE_MS} (ms)`, 'OUT_OF_RANGE');
    }
    const timestamped = context.options.boolean('signed_timestamp');
    return { mode, secret: Buffer.from(secret, 'utf8'), toleranceMs, replays: timestamped ? new SeenSignatures(WEBHOOK_REMEMBERED_SIGNATURES) : undefined };
  }
  throw ValidationError.of(`${context.name}.options.authentication`, `must be one of: ${WEBHOOK_AUTHENTICATION.join(', ')}`, 'INVALID_VALUE');
}

/**
 * Decides from the headers alone whether a request may go on to its body (a signature is checked against the body later).
 * `now` is the webhook's clock (ms since the epoch).
 */
export function admit(authentication: WebhookAuthentication, request: IncomingMessage, now = Date.now()): Admission | Promise<Admission> {
  if (authentication.mode === 'none') return { admitted: true };
  if (authentication.mode === 'hmac') return admitSigned(authentication, request, now);
  const header = request.headers.authorization;
  if (header === undefined) return { admitted: false, status: 401, reason: 'no Authorization header' };
  const checked = authentication.credentials.check(header);
  return checked instanceof Promise ? checked.then(bearerAdmission) : bearerAdmission(checked);
}

function bearerAdmission(checked: Principal | CredentialRefusal): Admission {
  if (isCredentialRefusal(checked)) return { admitted: false, status: checked.unavailable ? 503 : 401, reason: checked.reason };
  if (!checked.permissions.has(WEBHOOK_PERMISSION)) {
    return { admitted: false, status: 403, reason: `identity '${checked.identity}' lacks the permission '${WEBHOOK_PERMISSION}'` };
  }
  return { admitted: true, ...(checked.identity === undefined ? {} : { identity: checked.identity }) };
}

/** The signature and, when signed, the timestamp of a request's headers: refused when missing, malformed or out of the tolerance. */
function admitSigned(authentication: HmacAuthentication, request: IncomingMessage, now: number): Admission {
  const header = request.headers[WEBHOOK_SIGNATURE_HEADER];
  const hex = typeof header === 'string' ? SIGNATURE.exec(header.trim())?.[1] : undefined;
  if (hex === undefined) return { admitted: false, status: 401, reason: `no ${WEBHOOK_SIGNATURE_HEADER} header of the form sha256=<hex>` };
  const signature = Buffer.from(hex, 'hex');
  if (authentication.replays === undefined) return { admitted: true, signed: { signature, prefix: Buffer.alloc(0), expiresAt: 0 } };
  const stamp = request.headers[WEBHOOK_TIMESTAMP_HEADER];
  const text = typeof stamp === 'string' ? stamp.trim() : '';
  if (!TIMESTAMP.test(text)) return { admitted: false, status: 401, reason: `no ${WEBHOOK_TIMESTAMP_HEADER} header of Unix seconds` };
  const sentAt = Number(text) * 1000;
  if (Math.abs(now - sentAt) > authentication.toleranceMs) {
    const seconds = Math.round((now - sentAt) / 1000);
    return { admitted: false, status: 401, reason: `the timestamp is ${Math.abs(seconds)} s ${seconds > 0 ? 'old' : 'ahead'}, past the tolerance` };
  }
  return { admitted: true, signed: { signature, prefix: Buffer.from(`${text}.`, 'utf8'), expiresAt: sentAt + authentication.toleranceMs } };
}

/**
 * Why a signed body is refused, or undefined when it is taken: its signature must be the HMAC-SHA256 of the signed
 * prefix and the body under the secret (compared in constant time) and, with a signed timestamp, not one accepted before.
 * A taken signature is remembered until it expires.
 */
export function signatureRefusal(authentication: HmacAuthentication, body: Buffer, signed: Signed, now = Date.now()): string | undefined {
  const expected = createHmac('sha256', authentication.secret).update(signed.prefix).update(body).digest();
  if (expected.length !== signed.signature.length || !timingSafeEqual(expected, signed.signature)) return 'the signature does not match the body';
  if (authentication.replays !== undefined && !authentication.replays.remember(signed.signature.toString('hex'), signed.expiresAt, now)) {
    return 'the signature was accepted before: a replay';
  }
  return undefined;
}

/** Signatures accepted and not yet expired, at most `capacity` of them (the oldest forgotten first). */
export class SeenSignatures {
  /** Signature (hex) → when it expires (ms since the epoch), in the order they were taken. */
  private readonly expiries = new Map<string, number>();

  constructor(private readonly capacity: number) {}

  /** Remembers `signature` until `expiresAt`; false when it is already remembered and has not expired. */
  remember(signature: string, expiresAt: number, now: number): boolean {
    const known = this.expiries.get(signature);
    if (known !== undefined && known >= now) return false;
    this.expiries.delete(signature);
    for (const [seen, expiry] of this.expiries) {
      if (expiry >= now && this.expiries.size < this.capacity) break;
      this.expiries.delete(seen);
    }
    this.expiries.set(signature, expiresAt);
    return true;
  }

  /** How many signatures are remembered. */
  get size(): number {
    return this.expiries.size;
  }
}

/** The `WWW-Authenticate` challenge of a refusal: the scheme a caller must use, nothing more. */
export function challenge(authentication: WebhookAuthentication): string {
  return authentication.mode === 'hmac' ? `HMAC-SHA256 realm="loom", header="X-Loom-Signature"` : 'Bearer realm="loom"';
}

/** The TLS certificate and key a webhook serves with, read from `loom.tls`'s files; an unreadable file names its key. */
export function webhookTls(security: WebhookSecurity): { readonly cert: Buffer; readonly key: Buffer } | undefined {
  if (security.tls === undefined) return undefined;
  const read = (key: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new FailedPreconditionError(`${key}: the webhook cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`, { cause: error });
    }
  };
  return { cert: read('loom.tls.certFile', security.tls.certFile), key: read('loom.tls.keyFile', security.tls.keyFile) };
}
