import { type Interceptor, InterceptingCall } from '@grpc/grpc-js';

/** The metadata key of a bearer token. */
export const AUTHORIZATION = 'authorization';

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
