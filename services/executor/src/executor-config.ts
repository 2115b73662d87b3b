import { type LoomConfig } from '@loom/config';

/**
 * The sections of the configuration the executor is given: its own and the runtime's settings, the clients' TLS and
 * identities, every section that names a state path (a script's grants must leave them all out), and the NATS
 * JetStream settings of durable messages.
 */
export const EXECUTOR_CONFIG_SECTIONS = [
  'server',
  'data',
  'datasource',
  'startup',
  'security',
  'experimental',
  'scripts',
  'executor',
  'secrets',
  'embedded',
  'auth',
  'telemetry',
  'scheduler',
  'sources',
  'graph',
  'tls',
  'messaging',
] as const;

/** The executor's slice of the configuration. */
export type ExecutorConfig = Pick<LoomConfig, (typeof EXECUTOR_CONFIG_SECTIONS)[number]>;
