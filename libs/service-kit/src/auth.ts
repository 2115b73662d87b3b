import { X509Certificate } from 'node:crypto';
import {
  type Metadata,
  ResponderBuilder,
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  ServerListenerBuilder,
  status,
} from '@grpc/grpc-js';
import { type LoomRole, loomRoles } from '@loom/config';
import { AUTHORIZATION } from './bearer-token.js';
import { CALLER_IDENTITY_KEY, CALLER_PERMISSIONS_KEY } from './call-context.js';
import { BearerCredentials, type BearerCredentialOptions, type CredentialRefusal, isCredentialRefusal, type Principal } from './credentials.js';
import { permissionOf, permissionsOfRoles } from './permissions.js';

// the client side (a token on every call) is in bearer-token.ts, so that clients load none of this file
export { bearerTokenInterceptor } from './bearer-token.js';

/** What the transport knows about the peer (its TLS certificate). */
type AuthContext = ReturnType<ServerInterceptingCallInterface['getAuthContext']>;

/** A refused call, for the audit log and the process log (never with a credential in it). */
export interface Refusal {
  readonly path: string;
  readonly code: status;
  /** The identity that was refused, when one was proven. */
  readonly identity: string | undefined;
  /** Why, for operators; the client is told less. */
  readonly reason: string;
}

/** How callers prove who they are and what each may do: bearer tokens (BearerCredentialOptions), anonymity, certificates. */
export interface AuthOptions extends BearerCredentialOptions {
  /** Whether calls without credentials are accepted (with `anonymousRoles`). */
  readonly allowAnonymous: boolean;
  /** Roles of a call without credentials when allowed; every role unless given. */
  readonly anonymousRoles?: readonly LoomRole[];
  /** Whether a verified client certificate's common name is taken as the identity (mTLS). */
  readonly clientCertificates: boolean;
  /** Told of every refused call (PERMISSION_DENIED and UNAUTHENTICATED), to audit and log it. */
  readonly onRefused?: (refusal: Refusal) => void;
}

/** Outcome of checking a call's credentials. */
export type Authentication =
  | { readonly ok: true; readonly identity: string | undefined; readonly permissions?: ReadonlySet<string> }
  | { readonly ok: false; readonly code: status; readonly reason: string; readonly identity?: string; readonly clientMessage?: string };

/** Services every caller may reach: health checks and reflection must work for probes and grpcurl. */
const OPEN_SERVICES = ['/grpc.health.v1.Health/', '/grpc.reflection.v1.ServerReflection/', '/grpc.reflection.v1alpha.ServerReflection/'];

/** Verifies credentials and enforces the permission table and which identities may call which RPC. */
export class Authenticator {
  private readonly credentials: BearerCredentials;
  private readonly allowedByPath = new Map<string, ReadonlySet<string>>();
  private readonly anonymous: Principal;

  constructor(private readonly options: AuthOptions) {
    this.credentials = new BearerCredentials(options);
    this.anonymous = { identity: undefined, permissions: permissionsOfRoles(options.anonymousRoles ?? loomRoles) };
  }

  /** Restricts an RPC (by its full path, `/loom.v1.Secrets/DecryptResources`) to the given identities. */
  restrict(path: string, identities: readonly string[]): void {
    this.allowedByPath.set(path, new Set(identities));
  }

  /**
   * Decides whether a call with this metadata and transport may reach the RPC at `path`:
   * who the caller is, then whether that identity holds the permission the RPC needs.
   * Synchronous for static tokens; a provider's token needs its signature checked first.
   */
  authenticate(path: string, metadata: Metadata, authContext: AuthContext | null): Authentication | Promise<Authentication> {
    if (OPEN_SERVICES.some((prefix) => path.startsWith(prefix))) return { ok: true, identity: undefined };
    const presented = this.presentedPrincipal(metadata, authContext);
    if (presented instanceof Promise) return presented.then((principal) => this.authorise(path, principal));
    return this.authorise(path, presented);
  }

  private authorise(path: string, principal: Principal | Authentication): Authentication {
    if ('ok' in principal) return principal;
    const { identity, permissions } = principal;
    if (identity === undefined && !this.options.allowAnonymous) {
      return { ok: false, code: status.UNAUTHENTICATED, reason: `${path} requires credentials` };
    }
    const needed = permissionOf(path);
    if (needed === undefined) {
      return { ok: false, code: status.PERMISSION_DENIED, identity, reason: `${path} has no permission in the permission table, so nobody may call it` };
    }
    // Credentials could help an anonymous caller, so it is told to present some.
    if (identity === undefined && !permissions.has(needed)) {
      return { ok: false, code: status.UNAUTHENTICATED, reason: `${path} requires credentials` };
    }
    const who = `identity '${identity}'`;
    if (!permissions.has(needed)) {
      return { ok: false, code: status.PERMISSION_DENIED, identity, reason: `${who} lacks the permission '${needed}' that ${path} needs` };
    }
    const allowed = this.allowedByPath.get(path);
    if (allowed !== undefined && (identity === undefined || !allowed.has(identity))) {
      return identity === undefined
        ? { ok: false, code: status.UNAUTHENTICATED, reason: `${path} requires credentials` }
        : { ok: false, code: status.PERMISSION_DENIED, identity, reason: `${who} may not call ${path}` };
    }
    return { ok: true, identity, permissions };
  }

  private presentedPrincipal(metadata: Metadata, authContext: AuthContext | null): Principal | Authentication | Promise<Principal | Authentication> {
    const [header] = metadata.get(AUTHORIZATION);
    if (typeof header === 'string') {
      const checked = this.credentials.check(header);
      return checked instanceof Promise ? checked.then(refusalToAuthentication) : refusalToAuthentication(checked);
    }
    if (this.options.clientCertificates && authContext?.sslPeerCertificate?.raw !== undefined) {
      const commonName = commonNameOf(authContext.sslPeerCertificate.raw);
      if (commonName !== undefined) return this.credentials.configured(commonName);
    }
    return this.anonymous;
  }

  /** A server interceptor that rejects calls failing `authenticate` and passes the verified identity to handlers. */
  interceptor(): ServerInterceptor {
    return (methodDescriptor, call) => {
      const listener = new ServerListenerBuilder()
        .withOnReceiveMetadata((metadata, next) => {
          // Whatever the client sent under the identity key is dropped: only this interceptor sets it.
          metadata.remove(CALLER_IDENTITY_KEY);
          metadata.remove(CALLER_PERMISSIONS_KEY);
          const settle = (result: Authentication): void => {
            if (!result.ok) {
              this.options.onRefused?.({ path: methodDescriptor.path, code: result.code, identity: result.identity, reason: result.reason });
              call.sendStatus({ code: result.code, details: result.clientMessage ?? result.reason });
              return;
            }
            if (result.identity !== undefined) metadata.set(CALLER_IDENTITY_KEY, result.identity);
            if (result.permissions !== undefined) metadata.set(CALLER_PERMISSIONS_KEY, [...result.permissions].join(','));
            metadata.remove(AUTHORIZATION);
            next(metadata);
          };
          const result = this.authenticate(methodDescriptor.path, metadata, call.getAuthContext());
          if (result instanceof Promise) void result.then(settle);
          else settle(result);
        })
        .build();
      const responder = new ResponderBuilder().withStart((next) => next(listener)).build();
      return new ServerInterceptingCall(call, responder);
    };
  }
}

/** A refusal of the credential check as the Authentication the interceptor answers; a principal as it is. */
function refusalToAuthentication(checked: Principal | CredentialRefusal): Principal | Authentication {
  if (!isCredentialRefusal(checked)) return checked;
  return { ok: false, code: checked.unavailable ? status.UNAVAILABLE : status.UNAUTHENTICATED, reason: checked.reason, clientMessage: checked.clientMessage };
}

function commonNameOf(der: Buffer): string | undefined {
  const subject = new X509Certificate(der).subject;
  return /(?:^|\n)CN=([^\n]+)/.exec(subject)?.[1];
}
