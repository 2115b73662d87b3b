/**
 * `loom serve` arguments for an executor with the services it calls (secrets, config store, audit), anonymous callers
 * allowed and experimental kinds on: the stack the publish tests and benchmarks run workflows on.
 */
export const EXECUTOR_STACK_ARGUMENTS: readonly string[] = [
  '--services',
  'secrets,config-store,audit,executor',
  '--set',
  'loom.auth.allowAnonymous=true',
  '--set',
  'loom.experimental.enabled=true',
  // no warm Python interpreters made in the background: these stacks measure or test messages, not script starts
  '--set',
  'loom.scripts.python.warmInterpreters=0',
];

/** The executor identity's token in a cluster of test processes: the secrets service opens DecryptResources to it only. */
const CLUSTER_EXECUTOR_TOKEN = 'executor-token-cluster-4f7c2a9e61d0b385';
/** The services executors call: every one at the control process (the skill gateway's address is required, never called here). */
const CALLED_SERVICES = ['secrets', 'config-store', 'audit', 'skill-gateway'];

/** EXECUTOR_STACK_ARGUMENTS serving `services` only, the cluster's executor token known. */
function clusterStack(services: string): string[] {
  const at = EXECUTOR_STACK_ARGUMENTS.indexOf('--services') + 1;
  return [
    ...EXECUTOR_STACK_ARGUMENTS.map((argument, index) => (index === at ? services : argument)),
    '--set',
    `loom.auth.tokens.executor=${CLUSTER_EXECUTOR_TOKEN}`,
  ];
}

/**
 * `loom serve` arguments of the control process of several executors (issue 35): the services the executors call
 * (secrets, config store, audit), as a deployment's other services; workflows are pushed here.
 */
export const CLUSTER_CONTROL_ARGUMENTS: readonly string[] = clusterStack('secrets,config-store,audit');

/**
 * `loom serve` arguments of one of several executors: the executor alone, calling the control process at
 * `controlAddress`, its messages on the NATS server at `natsUrl` (which the executors share the work through).
 */
export function clusterExecutorArguments(controlAddress: string, natsUrl: string): string[] {
  return [
    ...clusterStack('executor'),
    ...CALLED_SERVICES.flatMap((service) => ['--set', `loom.services.${service}.address=${controlAddress}`]),
    '--set',
    `loom.messaging.nats.servers=${natsUrl}`,
  ];
}
