import { type Metadata } from '@grpc/grpc-js';

/** Metadata key under which the auth interceptor passes the verified caller identity on. */
export const CALLER_IDENTITY_KEY = 'x-loom-verified-identity';

/** What a handler knows about the call it serves. */
export interface CallContext {
  /** Verified identity of the caller, or undefined for an anonymous call. */
  readonly identity: string | undefined;
  readonly metadata: Metadata;
  /** Aborted when the client cancels or the server shuts down. */
  readonly signal: AbortSignal;
}

/** Reads the identity the auth interceptor verified (never a value the client sent). */
export function callerIdentity(metadata: Metadata): string | undefined {
  const [value] = metadata.get(CALLER_IDENTITY_KEY);
  return typeof value === 'string' && value !== '' ? value : undefined;
}
