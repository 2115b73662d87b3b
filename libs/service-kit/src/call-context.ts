import { type Metadata } from '@grpc/grpc-js';

/** Metadata key under which the auth interceptor passes the verified caller identity on. */
export const CALLER_IDENTITY_KEY = 'x-loom-verified-identity';

/** Metadata key under which the auth interceptor passes the verified caller's permissions on, comma-separated. */
export const CALLER_PERMISSIONS_KEY = 'x-loom-verified-permissions';

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

/** Whether the verified caller holds a permission beyond the one its RPC needed (set by the auth interceptor only). */
export function callerMay(metadata: Metadata, permission: string): boolean {
  const [value] = metadata.get(CALLER_PERMISSIONS_KEY);
  return typeof value === 'string' && value.split(',').includes(permission);
}
