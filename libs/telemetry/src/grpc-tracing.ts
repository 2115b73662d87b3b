import {
  InterceptingCall,
  type Interceptor,
  type Metadata,
  ResponderBuilder,
  ServerInterceptingCall,
  type ServerInterceptor,
  ServerListenerBuilder,
  status as GrpcStatus,
} from '@grpc/grpc-js';
import type { Attributes, Context, Span, TextMapGetter, TextMapSetter, Tracer } from '@opentelemetry/api';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  ATTR_NETWORK_PEER_ADDRESS,
  ATTR_NETWORK_PEER_PORT,
  ATTR_RPC_GRPC_STATUS_CODE,
  parseMethodPath,
  rpcAttributes,
  TELEMETRY_SCOPE,
} from './rpc-conventions.js';

/** Writes propagation fields (`traceparent`, `tracestate`, `baggage`) into gRPC metadata. */
export const metadataSetter: TextMapSetter<Metadata> = {
  set(carrier, key, value) {
    carrier.set(key, value);
  },
};

/** Reads propagation fields from gRPC metadata; binary (`-bin`) values are skipped. */
export const metadataGetter: TextMapGetter<Metadata> = {
  keys(carrier) {
    return Object.keys(carrier.getMap());
  },
  get(carrier, key) {
    const values = carrier.get(key).filter((value): value is string => typeof value === 'string');
    if (values.length === 0) return undefined;
    return values.length === 1 ? values[0] : values;
  },
};

/**
 * A client interceptor that wraps each call in a CLIENT span, a child of the context active when
 * the call is made, and sends that span as W3C trace context in the call metadata. The span ends
 * with the call's status; any status but OK marks it ERROR. Place it first in the client's
 * interceptor list so that it times everything the others do. Response callbacks run in the
 * caller's context. Without a tracer it uses the global provider's, looked up per call.
 */
export function clientTracingInterceptor(tracer?: Tracer): Interceptor {
  return (options, nextCall) => {
    const rpc = parseMethodPath(options.method_definition.path);
    const callerContext = context.active();
    const span = (tracer ?? trace.getTracer(TELEMETRY_SCOPE)).startSpan(rpc.spanName, { kind: SpanKind.CLIENT, attributes: rpcAttributes(rpc) }, callerContext);
    const spanContext = trace.setSpan(callerContext, span);
    return new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        propagation.inject(spanContext, metadata, metadataSetter);
        next(metadata, {
          onReceiveMetadata: (received, nextMetadata) => context.with(callerContext, () => nextMetadata(received)),
          onReceiveMessage: (message: unknown, nextMessage) => context.with(callerContext, () => nextMessage(message)),
          onReceiveStatus: (status, nextStatus) => {
            endRpcSpan(span, status.code, status.details);
            context.with(callerContext, () => nextStatus(status));
          },
        });
      },
    });
  };
}

/**
 * A server interceptor that reads W3C trace context from the call metadata and wraps the call in
 * a SERVER span, its child. The span is the active context while the handler (and every
 * interceptor after this one) runs, so the handler's outgoing calls become its children and its
 * log lines carry its ids. The span ends with the status sent; any status but OK marks it ERROR.
 * Place it first in the server's interceptor list. Without a tracer it uses the global
 * provider's, looked up per call.
 */
export function serverTracingInterceptor(tracer?: Tracer): ServerInterceptor {
  return (methodDescriptor, call) => {
    const rpc = parseMethodPath(methodDescriptor.path);
    let span: Span | undefined;
    let spanContext: Context = ROOT_CONTEXT;
    let ended = false;

    const begin = (metadata: Metadata | undefined): void => {
      if (span !== undefined) return;
      // the incoming call starts from the root: whatever context grpc-js internals happen to
      // run in must not become the parent
      const parent = metadata === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, metadata, metadataGetter);
      const attributes: Attributes = rpcAttributes(rpc);
      const peer = call.getConnectionInfo();
      if (peer.remoteAddress !== undefined) attributes[ATTR_NETWORK_PEER_ADDRESS] = peer.remoteAddress;
      if (peer.remotePort !== undefined) attributes[ATTR_NETWORK_PEER_PORT] = peer.remotePort;
      span = (tracer ?? trace.getTracer(TELEMETRY_SCOPE)).startSpan(rpc.spanName, { kind: SpanKind.SERVER, attributes }, parent);
      spanContext = trace.setSpan(parent, span);
    };
    const finish = (code: GrpcStatus, details: string): void => {
      if (ended) return;
      ended = true;
      begin(undefined);
      if (span !== undefined) endRpcSpan(span, code, details);
    };

    // grpc-js calls the handler from inside these `next` calls (unary: on half-close; client
    // streaming: on metadata), so running them in the span's context makes it active there
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        begin(metadata);
        context.with(spanContext, () => next(metadata));
      })
      .withOnReceiveMessage((message: unknown, next) => context.with(spanContext, () => next(message)))
      .withOnReceiveHalfClose((next) => context.with(spanContext, next))
      .withOnCancel(() => finish(GrpcStatus.CANCELLED, 'cancelled by the client'))
      .build();
    const responder = new ResponderBuilder()
      .withStart((next) => next(listener))
      .withSendStatus((status, next) => {
        finish(status.code, status.details);
        next(status);
      })
      .build();
    return new ServerInterceptingCall(call, responder);
  };
}

function endRpcSpan(span: Span, code: GrpcStatus, details: string): void {
  span.setAttribute(ATTR_RPC_GRPC_STATUS_CODE, code);
  if (code !== GrpcStatus.OK) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: details === '' ? statusName(code) : `${statusName(code)}: ${details}` });
  }
  span.end();
}

/** The name of a gRPC status code, e.g. `NOT_FOUND` for 5. */
function statusName(code: number): string {
  return (GrpcStatus as Record<number, string | undefined>)[code] ?? `CODE_${code}`;
}
