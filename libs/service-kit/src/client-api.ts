// `@loom/service-kit/client`: only what a gRPC client needs (no server, telemetry or configuration code), for
// processes that must start quickly, such as the `loom` command line.
export * from './client.js';
export { bearerTokenInterceptor } from './bearer-token.js';
export { EXIT_USAGE } from './exit-codes.js';
