// @loom/telemetry/grpc: the tracing and metrics of gRPC calls, apart from the main entry because they load
// @grpc/grpc-js (and http2), which the HTTP skills, logging and tracing through the main entry, must not.
export { clientTracingInterceptor, metadataGetter, metadataSetter, serverTracingInterceptor } from './grpc-tracing.js';
export { createRpcMetrics, METRIC_RPC_SERVER_DURATION, METRIC_RPC_SERVER_REQUESTS, type RpcMetrics, rpcMetricsInterceptor } from './rpc-metrics.js';
