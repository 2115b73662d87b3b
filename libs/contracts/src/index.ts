import { fileURLToPath } from 'node:url';

export * from './generated/loom/v1/failure.js';
export * from './generated/loom/v1/workflow.js';
export * from './generated/loom/v1/schedule.js';
export * from './generated/loom/v1/config_store.js';
export * from './generated/loom/v1/scheduler.js';
export * from './generated/loom/v1/executor.js';
export * from './generated/loom/v1/secrets.js';
export * from './generated/loom/v1/skill_gateway.js';
export * from './generated/loom/v1/audit.js';
export { Status as RpcStatus } from './generated/google/rpc/status.js';
export { BadRequest, BadRequest_FieldViolation } from './generated/google/rpc/error_details.js';
export { Any } from './generated/google/protobuf/any.js';

/** Absolute path of the binary descriptor set of every loom.v1 file and its imports. */
export const descriptorSetPath: string = fileURLToPath(new URL('../descriptor/loom.binpb', import.meta.url));

/** The fully qualified names of loom's six gRPC services. */
export const loomServiceNames = [
  'loom.v1.WorkflowStore',
  'loom.v1.Scheduler',
  'loom.v1.Executor',
  'loom.v1.Secrets',
  'loom.v1.SkillGateway',
  'loom.v1.Audit',
] as const;
