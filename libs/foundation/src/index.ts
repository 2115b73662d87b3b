export * from './atomic-file.js';
export * from './backoff.js';
export * from './keyed-lock.js';
export * from './lifecycle.js';
export * from './shutdown-once.js';
export * from './stream-channel.js';
export * from './with-resolvers.js';
export * from './worker-pool.js';
export { type WorkerAnswer, type WorkerFailure } from './worker-jobs.js';
