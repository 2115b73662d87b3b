import {
  type handleBidiStreamingCall,
  type handleServerStreamingCall,
  type ServerDuplexStream,
  type Metadata,
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
export type ServerStreamHandler<Req, Res> = (request: Req, send: (response: Res) => Promise<void>, context: CallContext) => Promise<void>;

/**
 * A bidirectional-streaming RPC: `requests` yields the client's messages as the handler pulls them
 * (a handler that stops pulling makes HTTP/2 flow control slow the client down); `send` resolves
 * once the stream can take more; returning ends the stream with OK.
 */
export type BidiStreamHandler<Req, Res> = (requests: AsyncIterable<Req>, send: (response: Res) => Promise<void>, context: CallContext) => Promise<void>;

type RequestOf<M> = M extends { requestDeserialize: (value: Buffer) => infer Req } ? Req : never;
type ResponseOf<M> = M extends { responseSerialize: (value: infer Res) => Buffer } ? Res : never;

/** Async handlers for every method of a service definition. */
export type AsyncImplementation<D> = {
  [K in keyof D]: D[K] extends { requestStream: true; responseStream: true }
    ? BidiStreamHandler<RequestOf<D[K]>, ResponseOf<D[K]>>
    : D[K] extends { responseStream: true }
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
    if (method.requestStream && method.responseStream) {
      adapted[name] = adaptBidiStream(handler as BidiStreamHandler<unknown, unknown>, environment);
      continue;
    }
    if (method.requestStream) continue; // loom's contracts have no client-only-streaming RPCs
    adapted[name] = method.responseStream
      ? adaptServerStream(handler as ServerStreamHandler<unknown, unknown>, environment)
      : adaptUnary(handler as UnaryHandler<unknown, unknown>, environment);
  }
  return adapted;
}

function contextOf(
  call: ServerUnaryCall<unknown, unknown> | ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>,
  signal: AbortSignal,
): CallContext {
  return { identity: callerIdentity(call.metadata), metadata: call.metadata, signal };
}

/**
 * The context of a unary call, whose cancellation machinery is made only when needed: grpc-js
 * emits 'cancelled' after every normally completed unary call too, and an AbortController plus a
 * CancelledError (with its stack) per call was about 13% of a busy server's time. The signal is
 * created when a handler first reads it; a cancellation aborts it only while the handler runs.
 */
class UnaryCallContext implements CallContext {
  readonly identity: string | undefined;
  readonly metadata: Metadata;
  private controller: AbortController | undefined;
  private cancelled = false;
  /** Set once the handler settled: a later 'cancelled' is grpc-js reporting completion. */
  finished = false;

  constructor(call: ServerUnaryCall<unknown, unknown>) {
    this.identity = callerIdentity(call.metadata);
    this.metadata = call.metadata;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.cancelled) this.controller.abort(new CancelledError());
    }
    return this.controller.signal;
  }

  /** The client really cancelled (the handler has not answered yet). */
  cancel(): void {
    if (this.finished || this.cancelled) return;
    this.cancelled = true;
    this.controller?.abort(new CancelledError());
  }
}

function adaptUnary(handler: UnaryHandler<unknown, unknown>, environment: HandlerEnvironment): handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    const context = new UnaryCallContext(call);
    call.once('cancelled', () => context.cancel());
    // a handler that throws before returning its promise is answered like one that rejects
    new Promise<unknown>((resolve) => resolve(handler(call.request, context))).then(
      (response) => {
        context.finished = true;
        callback(null, response);
      },
      (error: unknown) => {
        context.finished = true;
        callback(toStatusObject(error, environment.errorSink));
      },
    );
  };
}

function adaptServerStream(handler: ServerStreamHandler<unknown, unknown>, environment: HandlerEnvironment): handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const cancelled = cancellationSignal(call);
    const signal = AbortSignal.any([environment.shutdownSignal, cancelled]);
    new Promise<void>((resolve) => resolve(handler(call.request, sender(call, cancelled), contextOf(call, signal)))).then(
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

function adaptBidiStream(handler: BidiStreamHandler<unknown, unknown>, environment: HandlerEnvironment): handleBidiStreamingCall<unknown, unknown> {
  return (call) => {
    const cancelled = cancellationSignal(call);
    const signal = AbortSignal.any([environment.shutdownSignal, cancelled]);
    // the stream is a Readable: pulling through its async iterator reads no further than the handler asks
    // (plus the stream's small read-ahead); the default iterator would destroy the whole duplex at the
    // end of the requests, and with it the responses still to be sent and the status
    const requests: AsyncIterable<unknown> = { [Symbol.asyncIterator]: () => call.iterator({ destroyOnReturn: false }) };
    new Promise<void>((resolve) => resolve(handler(requests, sender(call, cancelled), contextOf(call, signal)))).then(
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

/** Writes to a response stream; resolves once the transport can take more. Writes stop only when the client is gone. */
function sender(
  call: ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>,
  cancelled: AbortSignal,
): (response: unknown) => Promise<void> {
  // on shutdown a handler may still send its last words
  return (response) => {
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
}

function cancellationSignal(call: ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>): AbortSignal {
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
