import {
  type CallOptions,
  type ChannelCredentials,
  type ChannelInterface,
  type ChannelOptions,
  type Client,
  type ClientUnaryCall,
  credentials as grpcCredentials,
  type Interceptor,
  InterceptingCall,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js';
import { loomServiceNames } from '@loom/contracts';
import { bearerTokenInterceptor } from './bearer-token.js';

/**
 * Status codes a loom client retries. UNAVAILABLE means the call never reached a handler that
 * could act on it (connection refused, server draining), so a retry cannot apply an effect twice.
 * Everything else (DEADLINE_EXCEEDED, INTERNAL, ABORTED, ...) goes back to the caller, who knows
 * whether the operation is idempotent.
 */
export const RETRYABLE_STATUS_CODES = ['UNAVAILABLE'] as const;

/** Retry with capped exponential backoff; grpc-js jitters each delay (gRPC retry design A6). */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly backoffMultiplier: number;
}

/** Four attempts, 100 ms doubling to at most 2 s. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 4, initialBackoffMs: 100, maxBackoffMs: 2000, backoffMultiplier: 2 };

/** Default deadline of a unary call. */
export const DEFAULT_DEADLINE_MS = 30_000;

/** How a client connects and who it says it is. */
export interface ClientOptions {
  /** Bearer token presented on every call. */
  readonly token?: string;
  /** Channel credentials (mTLS); insecure when absent. */
  readonly credentials?: ChannelCredentials;
  /** Deadline applied to unary calls that set none. */
  readonly deadlineMs?: number;
  /** Retry policy for RETRYABLE_STATUS_CODES, or false for none. */
  readonly retry?: RetryPolicy | false;
  /** Extra interceptors (tracing), outermost first. */
  readonly interceptors?: readonly Interceptor[];
  readonly channelOptions?: ChannelOptions;
  /** Makes the client's channel instead of grpc-js (LocalChannel.factory: calls to this process's own server in memory). */
  readonly channelFactory?: (target: string, credentials: ChannelCredentials, options: ChannelOptions) => ChannelInterface;
}

/** The constructor of a generated grpc-js client. */
export type ClientConstructor<C> = new (address: string, credentials: ChannelCredentials, options?: Partial<ChannelOptions>) => C;

/**
 * Largest gRPC message loom sends or accepts: room for a 4 MiB workflow configuration and its envelope, so the config
 * store can refuse a larger one with a clear INVALID_ARGUMENT instead of a transport error.
 */
export const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** Creates a grpc-js client with deadline, retry, identity and the given interceptors. */
export function createClient<C extends Client>(constructor: ClientConstructor<C>, address: string, options: ClientOptions = {}): C {
  const deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const interceptors: Interceptor[] = [...(options.interceptors ?? []), deadlineInterceptor(deadlineMs)];
  if (options.token !== undefined) interceptors.push(bearerTokenInterceptor(options.token));
  const channelOptions: Partial<ChannelOptions> = {
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.enable_channelz': 0, // per-call statistics for a channelz service no loom client serves
    ...options.channelOptions,
    interceptors,
    // grpc-js's Client takes the factory among its options and leaves it out of those it gives the factory
    ...(options.channelFactory === undefined ? {} : { channelFactoryOverride: options.channelFactory }),
  };
  if (options.retry !== false) {
    channelOptions['grpc.service_config'] = JSON.stringify(serviceConfig(options.retry ?? DEFAULT_RETRY_POLICY));
  } else {
    channelOptions['grpc.enable_retries'] = 0;
  }
  return new constructor(address, options.credentials ?? grpcCredentials.createInsecure(), channelOptions);
}

function serviceConfig(retry: RetryPolicy): object {
  return {
    methodConfig: [
      {
        name: loomServiceNames.map((service) => ({ service })),
        retryPolicy: {
          maxAttempts: retry.maxAttempts,
          initialBackoff: `${retry.initialBackoffMs / 1000}s`,
          maxBackoff: `${retry.maxBackoffMs / 1000}s`,
          backoffMultiplier: retry.backoffMultiplier,
          retryableStatusCodes: [...RETRYABLE_STATUS_CODES],
        },
      },
    ],
  };
}

/** Gives unary calls without a deadline the default one; streams keep theirs (none). */
function deadlineInterceptor(deadlineMs: number): Interceptor {
  return (options, nextCall) => {
    const unary = options.method_definition.requestStream === false && options.method_definition.responseStream === false;
    const withDeadline = unary && options.deadline === undefined ? { ...options, deadline: Date.now() + deadlineMs } : options;
    return new InterceptingCall(nextCall(withDeadline));
  };
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

/** Names of a generated client's unary methods. */
export type UnaryMethodName<C> = {
  [K in keyof C]: C[K] extends UnaryMethod<infer _Req, infer _Res> ? K : never;
}[keyof C];

type RequestOf<M> = M extends UnaryMethod<infer Req, infer _Res> ? Req : never;
type ResponseOf<M> = M extends UnaryMethod<infer _Req, infer Res> ? Res : never;

/** Per-call options of `call`. */
export interface UnaryCallOptions {
  readonly deadlineMs?: number;
  readonly signal?: AbortSignal;
  readonly metadata?: Metadata;
}

/** Calls a unary RPC of a generated client and resolves with its response. */
export function call<C extends Client, K extends UnaryMethodName<C>>(
  client: C,
  method: K,
  request: RequestOf<C[K]>,
  options: UnaryCallOptions = {},
): Promise<ResponseOf<C[K]>> {
  const fn = client[method] as unknown as UnaryMethod<RequestOf<C[K]>, ResponseOf<C[K]>>;
  const callOptions: Partial<CallOptions> = options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs };
  const signal = options.signal;
  return new Promise((resolve, reject) => {
    // the listener goes with the call: a long-lived signal (a workflow run's) must not collect one per call
    const cancel = (): void => pending.cancel();
    const pending = fn.call(client, request, options.metadata ?? new Metadata(), callOptions, (error, response) => {
      signal?.removeEventListener('abort', cancel);
      if (error) reject(error);
      else resolve(response);
    });
    if (signal?.aborted === true) pending.cancel();
    else signal?.addEventListener('abort', cancel, { once: true });
  });
}
