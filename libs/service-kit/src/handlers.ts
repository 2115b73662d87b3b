import {
  type handleServerStreamingCall,
  type handleUnaryCall,
  type ServerUnaryCall,
  type ServerWritableStream,
  type UntypedHandleCall,
} from '@grpc/grpc-js';
import { type CallContext, callerIdentity } from './call-context.js';
import { type ErrorSink, toStatusObject } from './errors.js';

/** The shape of one method in a ts-proto grpc-js service definition. */
export interface MethodDefinitionLike<Req, Res> {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  readonly requestDeserialize: (value: Buffer) => Req;
  readonly responseSerialize: (value: Res) => Buffer;
}

/** A ts-proto grpc-js service definition. */
export type ServiceDefinitionLike = Record<string, MethodDefinitionLike<unknown, never>>;

/** A unary RPC as an async function: return the response or throw a typed error. */
export type UnaryHandler<Req, Res> = (request: Req, context: CallContext) => Promise<Res>;

/** A server-streaming RPC: `send` resolves once the stream can take more; returning ends the stream with OK. */
export type ServerStreamHandler<Req, Res> = (
  request: Req,
  send: (response: Res) => Promise<void>,
  context: CallContext,
) => Promise<void>;

type RequestOf<M> = M extends { requestDeserialize: (value: Buffer) => infer Req } ? Req : never;
type ResponseOf<M> = M extends { responseSerialize: (value: infer Res) => Buffer } ? Res : never;

/** Async handlers for every method of a service definition. */
export type AsyncImplementation<D> = {
  [K in keyof D]: D[K] extends { responseStream: true }
    ? ServerStreamHandler<RequestOf<D[K]>, ResponseOf<D[K]>>
    : UnaryHandler<RequestOf<D[K]>, ResponseOf<D[K]>>;
};

/** Shared by the adapters: where hidden errors go, and the signal that fires on server shutdown. */
export interface HandlerEnvironment {
  readonly errorSink: ErrorSink;
  readonly shutdownSignal: AbortSignal;
}

/** Adapts async handlers to grpc-js handlers, mapping every thrown error to an explicit status. */
export function adaptImplementation(
  definition: Record<string, { readonly requestStream: boolean; readonly responseStream: boolean }>,
  implementation: Readonly<Record<string, unknown>>,
  environment: HandlerEnvironment,
): Record<string, UntypedHandleCall> {
  const adapted: Record<string, UntypedHandleCall> = {};
  for (const [name, method] of Object.entries(definition)) {
    const handler = implementation[name];
    if (method.requestStream) continue; // loom's contracts have no client-streaming RPCs
    adapted[name] = method.responseStream
      ? adaptServerStream(handler as ServerStreamHandler<unknown, unknown>, environment)
      : adaptUnary(handler as UnaryHandler<unknown, unknown>, environment);
  }
  return adapted;
}

function contextOf(call: ServerUnaryCall<unknown, unknown> | ServerWritableStream<unknown, unknown>, signal: AbortSignal): CallContext {
  return { identity: callerIdentity(call.metadata), metadata: call.metadata, signal };
}

function adaptUnary(handler: UnaryHandler<unknown, unknown>, environment: HandlerEnvironment): handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    const controller = new AbortController();
    call.on('cancelled', () => controller.abort(new CancelledError()));
    // a handler that throws before returning its promise is answered like one that rejects
    new Promise<unknown>((resolve) => resolve(handler(call.request, contextOf(call, controller.signal)))).then(
      (response) => callback(null, response),
      (error: unknown) => callback(toStatusObject(error, environment.errorSink)),
    );
  };
}

function adaptServerStream(
  handler: ServerStreamHandler<unknown, unknown>,
  environment: HandlerEnvironment,
): handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const cancelled = cancellationSignal(call);
    const signal = AbortSignal.any([environment.shutdownSignal, cancelled]);
    // Writes stop only when the client is gone; on shutdown a handler may still send its last words.
    const send = (response: unknown): Promise<void> => {
      if (cancelled.aborted || call.writableEnded) return Promise.resolve();
      if (call.write(response)) return Promise.resolve();
      // Back-pressure: wait until the transport drained before producing more.
      return new Promise((resolve) => {
        const done = (): void => {
          call.off('drain', done);
          cancelled.removeEventListener('abort', done);
          resolve();
        };
        call.on('drain', done);
        cancelled.addEventListener('abort', done);
      });
    };
    new Promise<void>((resolve) => resolve(handler(call.request, send, contextOf(call, signal)))).then(
      () => {
        if (!call.writableEnded && !call.cancelled) call.end();
      },
      (error: unknown) => {
        if (call.cancelled) return;
        call.emit('error', toStatusObject(error, environment.errorSink));
      },
    );
  };
}

function cancellationSignal(call: ServerWritableStream<unknown, unknown>): AbortSignal {
  const controller = new AbortController();
  call.on('cancelled', () => controller.abort(new CancelledError()));
  return controller.signal;
}

/** The client cancelled the call. */
export class CancelledError extends Error {
  constructor() {
    super('call cancelled by the client');
    this.name = 'CancelledError';
  }
}

/** Resolves when the signal aborts: the idiom for streaming handlers that wait for live events. */
export function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
