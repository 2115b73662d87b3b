import { performance } from 'node:perf_hooks';
import { ResponderBuilder, ServerInterceptingCall, type ServerInterceptor, ServerListenerBuilder, status as GrpcStatus } from '@grpc/grpc-js';
import { type Attributes, type Histogram, type Meter, type ObservableCounter } from '@opentelemetry/api';
import { ATTR_RPC_GRPC_STATUS_CODE, parseMethodPath, rpcAttributes, type RpcMethod } from './rpc-conventions.js';

/** Name of the server call duration histogram, in milliseconds. */
export const METRIC_RPC_SERVER_DURATION = 'rpc.server.duration';
/** Name of the counter of finished server calls. */
export const METRIC_RPC_SERVER_REQUESTS = 'rpc.server.requests';

/** The instruments the server metrics interceptor records to. */
export interface RpcMetrics {
  /** Time from a call's arrival to its status, in ms, by rpc.service, rpc.method and rpc.grpc.status_code. */
  readonly duration: Histogram;
  /** Finished calls, by rpc.service, rpc.method and rpc.grpc.status_code. */
  readonly requests: ObservableCounter;
  /** Counts one finished call under its attributes (read by `requests` at each collection). */
  count(attributes: Attributes): void;
}

/**
 * Creates the RPC server instruments on the given meter. The request counter is observed at
 * collection from counts kept here: the SDK hashes (sorts and stringifies) the attributes of every
 * synchronous recording, and one such hash per call is enough (the histogram's).
 */
export function createRpcMetrics(meter: Meter): RpcMetrics {
  const counts = new Map<Attributes, number>();
  const requests = meter.createObservableCounter(METRIC_RPC_SERVER_REQUESTS, {
    description: 'Inbound gRPC calls, by final status',
    unit: '{request}',
  });
  requests.addCallback((result) => {
    for (const [attributes, count] of counts) result.observe(count, attributes);
  });
  return {
    duration: meter.createHistogram(METRIC_RPC_SERVER_DURATION, {
      description: 'Duration of inbound gRPC calls, from arrival to status',
      unit: 'ms',
    }),
    requests,
    count(attributes) {
      counts.set(attributes, (counts.get(attributes) ?? 0) + 1);
    },
  };
}

/** A method's parsed path and its metric attributes by status code, made once per method. */
interface MethodAttributes {
  readonly rpc: RpcMethod;
  readonly byCode: Map<number, Attributes>;
}

/**
 * A server interceptor recording `rpc.server.duration` and `rpc.server.requests` for every call,
 * with its service, method and status code; a call the client cancels counts as CANCELLED.
 * Takes a meter (instruments are created once, here) or instruments from `createRpcMetrics`.
 * Attribute objects are made once per method and status and reused, so the counts stay keyed by
 * identity and nothing is allocated for them per call.
 */
export function rpcMetricsInterceptor(meterOrMetrics: Meter | RpcMetrics): ServerInterceptor {
  const instruments = isRpcMetrics(meterOrMetrics) ? meterOrMetrics : createRpcMetrics(meterOrMetrics);
  const methods = new Map<string, MethodAttributes>();
  const attributesOf = (path: string, code: number): Attributes => {
    let method = methods.get(path);
    if (method === undefined) {
      method = { rpc: parseMethodPath(path), byCode: new Map() };
      methods.set(path, method);
    }
    let attributes = method.byCode.get(code);
    if (attributes === undefined) {
      attributes = Object.freeze({ ...rpcAttributes(method.rpc), [ATTR_RPC_GRPC_STATUS_CODE]: code });
      method.byCode.set(code, attributes);
    }
    return attributes;
  };
  return (methodDescriptor, call) => {
    const startedAt = performance.now();
    let recorded = false;
    const record = (code: GrpcStatus): void => {
      if (recorded) return;
      recorded = true;
      const attributes = attributesOf(methodDescriptor.path, code);
      instruments.duration.record(performance.now() - startedAt, attributes);
      instruments.count(attributes);
    };
    const listener = new ServerListenerBuilder().withOnCancel(() => record(GrpcStatus.CANCELLED)).build();
    const responder = new ResponderBuilder()
      .withStart((next) => next(listener))
      .withSendStatus((status, next) => {
        record(status.code);
        next(status);
      })
      .build();
    return new ServerInterceptingCall(call, responder);
  };
}

function isRpcMetrics(value: Meter | RpcMetrics): value is RpcMetrics {
  return 'duration' in value && 'count' in value;
}
