import { type ServiceName } from '@loom/config';

/** What a caller may do; every RPC needs exactly one. */
export const PERMISSIONS = [
  'read',
  'read-variables',
  'edit',
  'operate',
  'invoke-skill',
  'administer',
  'query-graph',
  'read-graph',
  'seal',
  'decrypt',
  'append-audit',
  'reseal',
  // the bodies and headers of failed messages (issue 50): operator and admin, never viewer
  'read-message-content',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** The roles of people (static tokens or identity-provider tokens). */
export const ROLES = ['viewer', 'editor', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The one table of which permission each RPC needs, by full method path. An RPC that is not
 * here is refused to everyone (a test walks the contracts so none is forgotten). Health and
 * reflection are open to all callers and are not in it.
 */
export const RPC_PERMISSIONS: Readonly<Record<string, Permission>> = {
  '/loom.v1.WorkflowStore/GetWorkflow': 'read',
  '/loom.v1.WorkflowStore/ListWorkflows': 'read',
  '/loom.v1.WorkflowStore/WatchWorkflows': 'read',
  '/loom.v1.WorkflowStore/GetSchedule': 'read',
  '/loom.v1.WorkflowStore/PutWorkflow': 'edit',
  '/loom.v1.WorkflowStore/DeleteWorkflow': 'edit',
  '/loom.v1.WorkflowStore/PutSchedule': 'edit',
  '/loom.v1.WorkflowStore/ResealWorkflows': 'reseal',
  // history and promotion (issue 53): PlanWorkflows is ApplyWorkflows' plan without writing, for a viewer's CI check
  '/loom.v1.WorkflowStore/ListWorkflowVersions': 'read',
  '/loom.v1.WorkflowStore/DiffWorkflowVersions': 'read',
  '/loom.v1.WorkflowStore/RollbackWorkflow': 'edit',
  '/loom.v1.WorkflowStore/ApplyWorkflows': 'edit',
  '/loom.v1.WorkflowStore/PlanWorkflows': 'read',

  '/loom.v1.Scheduler/ListSchedules': 'read',
  '/loom.v1.Scheduler/PauseSchedule': 'operate',
  '/loom.v1.Scheduler/ResumeSchedule': 'operate',
  '/loom.v1.Scheduler/TriggerNow': 'operate',

  '/loom.v1.Executor/GetWorkflowStatus': 'read',
  '/loom.v1.Executor/WatchRun': 'read',
  '/loom.v1.Executor/ListComponentDefinitions': 'read',
  '/loom.v1.Executor/StartWorkflow': 'operate',
  '/loom.v1.Executor/StopWorkflow': 'operate',
  '/loom.v1.Executor/PauseWorkflow': 'operate',
  '/loom.v1.Executor/ResumeWorkflow': 'operate',
  '/loom.v1.Executor/PublishMessage': 'operate',
  '/loom.v1.Executor/PublishMessages': 'operate',
  '/loom.v1.Executor/PublishStream': 'operate',
  '/loom.v1.Executor/DryRun': 'operate',
  '/loom.v1.Executor/QueryGraph': 'query-graph',
  '/loom.v1.Executor/ReadGraph': 'read-graph',
  '/loom.v1.Executor/DescribeGraph': 'read',
  // the failure store (issue 50): listing needs read, content also read-message-content (checked by the handler)
  '/loom.v1.Executor/ListFailedMessages': 'read',
  '/loom.v1.Executor/GetFailedMessage': 'read',
  '/loom.v1.Executor/RetryFailedMessages': 'operate',
  '/loom.v1.Executor/DiscardFailedMessages': 'operate',
  // replay of kept processed messages (issue 50)
  '/loom.v1.Executor/ReplayMessages': 'operate',
  // what happened to one message (issue 50): metadata only, no bodies
  '/loom.v1.Executor/TraceMessage': 'read',

  '/loom.v1.Secrets/DescribeStorage': 'read',
  '/loom.v1.Secrets/GetVariable': 'read-variables',
  '/loom.v1.Secrets/ListVariables': 'read-variables',
  '/loom.v1.Secrets/CreateVariable': 'edit',
  '/loom.v1.Secrets/UpdateVariable': 'edit',
  '/loom.v1.Secrets/DeleteVariable': 'edit',
  '/loom.v1.Secrets/RotateKey': 'administer',
  '/loom.v1.Secrets/SealConfiguration': 'seal',
  '/loom.v1.Secrets/DecryptResources': 'decrypt',

  '/loom.v1.SkillGateway/ListSkills': 'read',
  '/loom.v1.SkillGateway/CheckSkill': 'read',
  '/loom.v1.SkillGateway/RegisterSkill': 'edit',
  '/loom.v1.SkillGateway/DeleteSkill': 'edit',
  '/loom.v1.SkillGateway/CreatePipeline': 'edit',
  '/loom.v1.SkillGateway/InvokeSkill': 'invoke-skill',
  '/loom.v1.SkillGateway/InvokeSkillBatch': 'invoke-skill',

  '/loom.v1.Audit/Query': 'read',
  '/loom.v1.Audit/Watch': 'read',
  '/loom.v1.Audit/Verify': 'administer',
  '/loom.v1.Audit/Append': 'append-audit',
  '/loom.v1.Audit/AppendBatch': 'append-audit',
};

/** What each role of a person may do. */
export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  viewer: ['read', 'query-graph', 'read-graph'],
  editor: ['read', 'query-graph', 'read-graph', 'edit', 'read-variables'],
  operator: ['read', 'query-graph', 'read-graph', 'operate', 'invoke-skill', 'read-message-content'],
  admin: ['read', 'query-graph', 'read-graph', 'edit', 'read-variables', 'operate', 'invoke-skill', 'administer', 'reseal', 'read-message-content'],
};

/** The narrow rights of each service's own identity: what it calls on the others, nothing more. */
export const SERVICE_PERMISSIONS: Readonly<Record<ServiceName, readonly Permission[]>> = {
  'config-store': ['read', 'seal', 'append-audit'],
  scheduler: ['read', 'operate', 'append-audit'],
  executor: ['read', 'decrypt', 'invoke-skill', 'append-audit'],
  // reseal: RotateKey has the config store re-seal the stored workflows under the new key
  secrets: ['read', 'edit', 'append-audit', 'reseal'],
  'skill-gateway': ['read', 'append-audit'],
  audit: ['append-audit'],
};

/** The permissions of a set of roles. */
export function permissionsOfRoles(roles: readonly Role[]): Set<Permission> {
  return new Set(roles.flatMap((role) => ROLE_PERMISSIONS[role]));
}

/** Whether a name is one of loom's roles. */
export function isRole(name: string): name is Role {
  return (ROLES as readonly string[]).includes(name);
}

/** The permission an RPC needs, or undefined when it is not in the table (refused to all). */
export function permissionOf(path: string): Permission | undefined {
  return Object.hasOwn(RPC_PERMISSIONS, path) ? RPC_PERMISSIONS[path] : undefined;
}
