import { performance } from 'node:perf_hooks';
import { ResponderBuilder, ServerInterceptingCall, type ServerInterceptor, ServerListenerBuilder, status as GrpcStatus } from '@grpc/grpc-js';
import { type Counter, type Histogram, type Meter } from '@opentelemetry/api';
import { ATTR_RPC_GRPC_STATUS_CODE, parseMethodPath, rpcAttributes } from './rpc-conventions.js';

/** Name of the server call duration histogram, in milliseconds. */
export const METRIC_RPC_SERVER_DURATION = 'rpc.server.duration';
/** Name of the counter of finished server calls. */
export const METRIC_RPC_SERVER_REQUESTS = 'rpc.server.requests';

/** The instruments the server metrics interceptor records to. */
export interface RpcMetrics {
  /** Time from a call's arrival to its status, in ms, by rpc.service, rpc.method and rpc.grpc.status_code. */
  readonly duration: Histogram;
  /** Finished calls, by rpc.service, rpc.method and rpc.grpc.status_code. */
  readonly requests: Counter;
}

/** Creates the RPC server instruments on the given meter. */
export function createRpcMetrics(meter: Meter): RpcMetrics {
  return {
    duration: meter.createHistogram(METRIC_RPC_SERVER_DURATION, {
      description: 'Duration of inbound gRPC calls, from arrival to status',
      unit: 'ms',
    }),
    requests: meter.createCounter(METRIC_RPC_SERVER_REQUESTS, {
      description: 'Inbound gRPC calls, by final status',
      unit: '{request}',
    }),
  };
}

/**
 * A server interceptor recording `rpc.server.duration` and `rpc.server.requests` for every call,
 * with its service, method and status code; a call the client cancels counts as CANCELLED.
 * Takes a meter (instruments are created once, here) or instruments from `createRpcMetrics`.
 */
export function rpcMetricsInterceptor(meterOrMetrics: Meter | RpcMetrics): ServerInterceptor {
  const instruments = isRpcMetrics(meterOrMetrics) ? meterOrMetrics : createRpcMetrics(meterOrMetrics);
  return (methodDescriptor, call) => {
    const rpc = parseMethodPath(methodDescriptor.path);
    const startedAt = performance.now();
    let recorded = false;
    const record = (code: GrpcStatus): void => {
      if (recorded) return;
      recorded = true;
      const attributes = { ...rpcAttributes(rpc), [ATTR_RPC_GRPC_STATUS_CODE]: code };
      instruments.duration.record(performance.now() - startedAt, attributes);
      instruments.requests.add(1, attributes);
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
  return 'duration' in value && 'requests' in value;
}
