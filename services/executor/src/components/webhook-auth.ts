import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type IncomingMessage } from 'node:http';
import { FailedPreconditionError, ValidationError, WEBHOOK_AUTHENTICATION } from '@loom/domain';
import { type BearerCredentials, type CredentialRefusal, isCredentialRefusal, type Principal } from '@loom/service-kit';
import { type ComponentContext } from '../runtime/component.js';

/**
 * The request header of a signed webhook call: `X-Loom-Signature: sha256=<hex>`, the HMAC-SHA256 of the raw
 * body bytes under the webhook's shared secret, 64 hexadecimal digits (either case).
 */
export const WEBHOOK_SIGNATURE_HEADER = 'x-loom-signature';

/** The permission a bearer token's identity needs to post to a webhook: the one PublishMessage needs (operator, admin). */
export const WEBHOOK_PERMISSION = 'operate';

const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;

/** What a webhook takes from loom's own settings: the bearer-token check of `loom.auth` and the certificate of `loom.tls`. */
export interface WebhookSecurity {
  /** The check of `loom.auth`'s static tokens and identity-provider tokens (built when a webhook first needs it). */
  readonly credentials: () => BearerCredentials;
  /** `loom.tls`'s certificate and key files when TLS is configured: every webhook then serves HTTPS with them. */
  readonly tls: { readonly certFile: string; readonly keyFile: string } | undefined;
}

/** How one webhook authenticates its callers (its `authentication` option). */
export type WebhookAuthentication =
  { readonly mode: 'bearer'; readonly credentials: BearerCredentials } | { readonly mode: 'hmac'; readonly secret: Buffer } | { readonly mode: 'none' };

/** What the request's headers decide, before its body is read. */
export type Admission =
  /** Let in; with `signature`, only once the body matches it. */
  | { readonly admitted: true; readonly identity?: string; readonly signature?: Buffer }
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
    return { mode, secret: Buffer.from(secret, 'utf8') };
  }
  throw ValidationError.of(`${context.name}.options.authentication`, `must be one of: ${WEBHOOK_AUTHENTICATION.join(', ')}`, 'INVALID_VALUE');
}

/** Decides from the headers alone whether a request may go on to its body (a signature is checked against the body later). */
export function admit(authentication: WebhookAuthentication, request: IncomingMessage): Admission | Promise<Admission> {
  if (authentication.mode === 'none') return { admitted: true };
  if (authentication.mode === 'hmac') {
    const header = request.headers[WEBHOOK_SIGNATURE_HEADER];
    const hex = typeof header === 'string' ? SIGNATURE.exec(header.trim())?.[1] : undefined;
    if (hex === undefined) return { admitted: false, status: 401, reason: `no ${WEBHOOK_SIGNATURE_HEADER} header of the form sha256=<hex>` };
    return { admitted: true, signature: Buffer.from(hex, 'hex') };
  }
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

/** Whether `signature` is the HMAC-SHA256 of `body` under `secret`, compared in constant time. */
export function signatureMatches(secret: Buffer, body: Buffer, signature: Buffer): boolean {
  const expected = createHmac('sha256', secret).update(body).digest();
  return expected.length === signature.length && timingSafeEqual(expected, signature);
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
