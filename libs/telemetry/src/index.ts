export { PrometheusStartError, TelemetryAlreadyRegisteredError, TelemetryConfigError } from './errors.js';
export { createLogger, type Logger, type LoggerOptions } from './logger.js';
export { RedactingSpanProcessor } from './redacting-span-processor.js';
export {
  ATTR_NETWORK_PEER_ADDRESS,
  ATTR_NETWORK_PEER_PORT,
  ATTR_RPC_GRPC_STATUS_CODE,
  ATTR_RPC_METHOD,
  ATTR_RPC_SERVICE,
  ATTR_RPC_SYSTEM,
  parseMethodPath,
  RPC_SYSTEM_VALUE_GRPC,
  type RpcMethod,
  TELEMETRY_SCOPE,
} from './rpc-conventions.js';
export { REDACTED, redactor, SecretRedactor } from './secret-redactor.js';
export { startTelemetry, type Telemetry, type TelemetryOptions } from './telemetry.js';
