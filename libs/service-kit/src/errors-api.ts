// `@loom/service-kit/errors`: what a client needs to report a failed call or start (status, field violations), apart
// from `@loom/service-kit/client` so that a client that succeeds loads none of it (the `loom` command line).
export { fieldViolationsOf, isServiceError } from './errors.js';
export { describeStartupError } from './startup-error.js';
