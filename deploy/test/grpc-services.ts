/** The gRPC service each of loom's six services hosts, by service name: the name its health check and probes report. */
export const GRPC_SERVICE_OF: Readonly<Record<string, string>> = {
  'config-store': 'loom.v1.WorkflowStore',
  scheduler: 'loom.v1.Scheduler',
  executor: 'loom.v1.Executor',
  secrets: 'loom.v1.Secrets',
  'skill-gateway': 'loom.v1.SkillGateway',
  audit: 'loom.v1.Audit',
};
