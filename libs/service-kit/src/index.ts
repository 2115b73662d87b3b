export * from './auth.js';
export * from './permissions.js';
export * from './call-context.js';
export * from './client.js';
export * from './errors.js';
export * from './handlers.js';
export * from './health.js';
export * from './run-services.js';
export * from './server.js';
export * from './service-clients.js';
export * from './service-module.js';
export * from './process.js';
export { describeStartupError } from './startup-error.js';
export * from './audit-client.js';
// what is not gRPC lives in @loom/foundation; re-exported so the services' imports from the kit stay as they are
export * from '@loom/foundation';
