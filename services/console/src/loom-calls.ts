import { readFileSync } from 'node:fs';
import { type ChannelCredentials, type ClientReadableStream, credentials as channelCredentials, Metadata, status } from '@grpc/grpc-js';
import { type LoomConfig, type ServiceName, tlsFiles } from '@loom/config';
import { call, type ClientOf, isServiceError, SERVICE_TITLES, ServiceClients, type UnaryMethodName } from '@loom/service-kit';
import { fieldViolationsOf } from '@loom/service-kit/errors';
import { clientTracingInterceptor } from '@loom/telemetry/grpc';
import { ApiError } from './http-errors.js';

// The console holds no rights of its own: every call to loom carries the signed-in user's bearer token, so the
// services check it against the same permission table as any gRPC caller and audit the action under that identity.

/** Where the console reaches loom's services: each service's `loom.services.<name>.address`, else `fallback` (loom serve's own port). */
export interface LoomAddresses {
  readonly config: LoomConfig;
  /** The gRPC address of the process the console runs in (`127.0.0.1:<server.port>`), for the services without an address. */
  readonly fallback: () => string;
}

/** A user's token as call metadata; none for a session without a token (loom.auth.allowAnonymous). */
function bearer(token: string): Metadata {
  const metadata = new Metadata();
  if (token !== '') metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

/** The client side of the console: one channel per service, shared by every session; the token goes with each call. */
export class LoomCalls {
  private readonly clients: ServiceClients;

  constructor({ config, fallback }: LoomAddresses) {
    const credentials = clientCredentials(config);
    this.clients = new ServiceClients({
      addressOf: (service) => config.services[service].address ?? fallback(),
      interceptors: [clientTracingInterceptor()],
      ...(credentials === undefined ? {} : { credentials }),
    });
  }

  /** Calls a unary RPC with the user's token; a refusal or failure becomes the ApiError the browser is answered. */
  async unary<S extends ServiceName, K extends UnaryMethodName<ClientOf<S>>>(
    service: S,
    method: K,
    request: Parameters<typeof call<ClientOf<S>, K>>[2],
    token: string,
  ): Promise<Awaited<ReturnType<typeof call<ClientOf<S>, K>>>> {
    try {
      return await call(this.clients.get(service), method, request, { metadata: bearer(token) });
    } catch (error) {
      throw apiErrorOf(error, service);
    }
  }

  /** Opens a server stream with the user's token: `open` is given the service's client and the metadata to call with. */
  stream<S extends ServiceName, T>(
    service: S,
    token: string,
    open: (client: ClientOf<S>, metadata: Metadata) => ClientReadableStream<T>,
  ): ClientReadableStream<T> {
    return open(this.clients.get(service), bearer(token));
  }

  close(): void {
    this.clients.close();
  }
}

/** The HTTP status of a gRPC status, as the console's API answers it. */
export function httpStatusOf(code: status): number {
  switch (code) {
    case status.INVALID_ARGUMENT:
    case status.OUT_OF_RANGE:
      return 400;
    case status.UNAUTHENTICATED:
      return 401;
    case status.PERMISSION_DENIED:
      return 403;
    case status.NOT_FOUND:
      return 404;
    case status.ALREADY_EXISTS:
    case status.FAILED_PRECONDITION:
    case status.ABORTED:
      return 409;
    case status.RESOURCE_EXHAUSTED:
      return 429;
    case status.UNIMPLEMENTED:
      return 501;
    case status.UNAVAILABLE:
      return 503;
    case status.DEADLINE_EXCEEDED:
      return 504;
    default:
      return 502;
  }
}

/**
 * A failed call as the console answers it: the service's own message for what the user can act on (bad input, a
 * refusal, a missing workflow), a plain sentence when the service is down, and nothing of an internal error's text.
 */
export function apiErrorOf(error: unknown, service: ServiceName): ApiError {
  if (error instanceof ApiError) return error;
  if (!isServiceError(error)) return new ApiError(502, `${SERVICE_TITLES[service]} gave no answer the console understands`, undefined, { cause: error });
  const httpStatus = httpStatusOf(error.code);
  if (error.code === status.UNAVAILABLE)
    return new ApiError(503, `${SERVICE_TITLES[service]} cannot be reached; try again shortly`, undefined, { cause: error });
  if (httpStatus === 502) return new ApiError(502, `${SERVICE_TITLES[service]} failed (${status[error.code]}); its log says why`, undefined, { cause: error });
  const [violation] = fieldViolationsOf(error);
  return new ApiError(httpStatus, error.details || status[error.code], violation?.field || undefined, { cause: error });
}

/** TLS client credentials when loom.tls is configured (the services then accept nothing else). */
function clientCredentials(config: LoomConfig): ChannelCredentials | undefined {
  const tls = tlsFiles(config.tls);
  if (tls === undefined) return undefined;
  return channelCredentials.createSsl(readFileSync(tls.caFile), readFileSync(tls.keyFile), readFileSync(tls.certFile));
}
