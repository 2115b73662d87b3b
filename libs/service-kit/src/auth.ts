import { createHash, X509Certificate } from 'node:crypto';
import {
  type Interceptor,
  InterceptingCall,
  type Metadata,
  ResponderBuilder,
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  ServerListenerBuilder,
  status,
} from '@grpc/grpc-js';
import { CALLER_IDENTITY_KEY } from './call-context.js';

/** What the transport knows about the peer (its TLS certificate). */
type AuthContext = ReturnType<ServerInterceptingCallInterface['getAuthContext']>;

/** How callers prove who they are. */
export interface AuthOptions {
  /** Identity → bearer token. Tokens are compared by their SHA-256, never logged. */
  readonly tokens: Readonly<Record<string, string>>;
  /** Whether calls without credentials may use RPCs that do not name allowed identities. */
  readonly allowAnonymous: boolean;
  /** Whether a verified client certificate's common name is taken as the identity (mTLS). */
  readonly clientCertificates: boolean;
}

/** Outcome of checking a call's credentials. */
export type Authentication =
  | { readonly ok: true; readonly identity: string | undefined }
  | { readonly ok: false; readonly code: status; readonly reason: string };

const AUTHORIZATION = 'authorization';
const BEARER = /^Bearer\s+(\S+)$/i;

/** Services every caller may reach: health checks and reflection must work for probes and grpcurl. */
const OPEN_SERVICES = ['/grpc.health.v1.Health/', '/grpc.reflection.v1.ServerReflection/', '/grpc.reflection.v1alpha.ServerReflection/'];

/** Verifies credentials and enforces which identities may call which RPC. */
export class Authenticator {
  private readonly identityByTokenHash = new Map<string, string>();
  private readonly allowedByPath = new Map<string, ReadonlySet<string>>();

  constructor(private readonly options: AuthOptions) {
    for (const [identity, token] of Object.entries(options.tokens)) {
      this.identityByTokenHash.set(hashToken(token), identity);
    }
  }

  /** Restricts an RPC (by its full path, `/loom.v1.Secrets/DecryptResources`) to the given identities. */
  restrict(path: string, identities: readonly string[]): void {
    this.allowedByPath.set(path, new Set(identities));
  }

  /** Decides whether a call with this metadata and transport may reach the RPC at `path`. */
  authenticate(path: string, metadata: Metadata, authContext: AuthContext | null): Authentication {
    if (OPEN_SERVICES.some((prefix) => path.startsWith(prefix))) return { ok: true, identity: undefined };
    const presented = this.presentedIdentity(metadata, authContext);
    if (!presented.ok) return presented;
    const { identity } = presented;
    const allowed = this.allowedByPath.get(path);
    if (identity === undefined) {
      if (allowed !== undefined || !this.options.allowAnonymous) {
        return { ok: false, code: status.UNAUTHENTICATED, reason: `${path} requires credentials` };
      }
      return presented;
    }
    if (allowed !== undefined && !allowed.has(identity)) {
      return { ok: false, code: status.PERMISSION_DENIED, reason: `identity '${identity}' may not call ${path}` };
    }
    return presented;
  }

  private presentedIdentity(metadata: Metadata, authContext: AuthContext | null): Authentication {
    const [header] = metadata.get(AUTHORIZATION);
    if (typeof header === 'string') {
      const token = BEARER.exec(header)?.[1];
      const identity = token === undefined ? undefined : this.identityByTokenHash.get(hashToken(token));
      if (identity === undefined) return { ok: false, code: status.UNAUTHENTICATED, reason: 'invalid bearer token' };
      return { ok: true, identity };
    }
    if (this.options.clientCertificates && authContext?.sslPeerCertificate?.raw !== undefined) {
      const commonName = commonNameOf(authContext.sslPeerCertificate.raw);
      if (commonName !== undefined) return { ok: true, identity: commonName };
    }
    return { ok: true, identity: undefined };
  }

  /** A server interceptor that rejects calls failing `authenticate` and passes the verified identity to handlers. */
  interceptor(): ServerInterceptor {
    return (methodDescriptor, call) => {
      const listener = new ServerListenerBuilder()
        .withOnReceiveMetadata((metadata, next) => {
          // Whatever the client sent under the identity key is dropped: only this interceptor sets it.
          metadata.remove(CALLER_IDENTITY_KEY);
          const result = this.authenticate(methodDescriptor.path, metadata, call.getAuthContext());
          if (!result.ok) {
            call.sendStatus({ code: result.code, details: result.reason });
            return;
          }
          if (result.identity !== undefined) metadata.set(CALLER_IDENTITY_KEY, result.identity);
          metadata.remove(AUTHORIZATION);
          next(metadata);
        })
        .build();
      const responder = new ResponderBuilder().withStart((next) => next(listener)).build();
      return new ServerInterceptingCall(call, responder);
    };
  }
}

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function commonNameOf(der: Buffer): string | undefined {
  const subject = new X509Certificate(der).subject;
  return /(?:^|\n)CN=([^\n]+)/.exec(subject)?.[1];
}

/** A client interceptor that presents a bearer token on every call. */
export function bearerTokenInterceptor(token: string): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set(AUTHORIZATION, `Bearer ${token}`);
        next(metadata, listener);
      },
    });
}
