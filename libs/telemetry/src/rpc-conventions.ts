// Copied from @opentelemetry/semantic-conventions/incubating (1.40.0), as its README advises for
// incubating names: the entry point may change them in a minor release.
/** `rpc.system`: the remoting system; always `grpc` here. */
export const ATTR_RPC_SYSTEM = 'rpc.system';
/** `rpc.service`: the full service name, e.g. `loom.v1.Secrets`. */
export const ATTR_RPC_SERVICE = 'rpc.service';
/** `rpc.method`: the method name, e.g. `DecryptResources`. */
export const ATTR_RPC_METHOD = 'rpc.method';
/** `rpc.grpc.status_code`: the numeric gRPC status code of the call. */
export const ATTR_RPC_GRPC_STATUS_CODE = 'rpc.grpc.status_code';
/** `network.peer.address`: the address of the other end of the connection. */
export const ATTR_NETWORK_PEER_ADDRESS = 'network.peer.address';
/** `network.peer.port`: the port of the other end of the connection. */
export const ATTR_NETWORK_PEER_PORT = 'network.peer.port';
/** Value of `rpc.system` for gRPC. */
export const RPC_SYSTEM_VALUE_GRPC = 'grpc';

/** The instrumentation scope of everything this package records. */
export const TELEMETRY_SCOPE = '@loom/telemetry';

/** A gRPC method path split into its service and method. */
export interface RpcMethod {
  /** `loom.v1.Secrets/DecryptResources`: the span name the RPC conventions ask for. */
  readonly spanName: string;
  readonly service: string;
  readonly method: string;
}

/** Splits a path like `/loom.v1.Secrets/DecryptResources` into service and method. */
export function parseMethodPath(path: string): RpcMethod {
  const trimmed = path.startsWith('/') ? path.slice(1) : path;
  const slash = trimmed.lastIndexOf('/');
  if (slash < 0) return { spanName: trimmed, service: '', method: trimmed };
  return { spanName: trimmed, service: trimmed.slice(0, slash), method: trimmed.slice(slash + 1) };
}

/** The attributes every RPC span and metric carries. */
export function rpcAttributes(rpc: RpcMethod): Record<string, string> {
  return { [ATTR_RPC_SYSTEM]: RPC_SYSTEM_VALUE_GRPC, [ATTR_RPC_SERVICE]: rpc.service, [ATTR_RPC_METHOD]: rpc.method };
}
