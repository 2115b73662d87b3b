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
