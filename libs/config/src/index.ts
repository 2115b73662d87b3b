export { ConfigError, type ConfigErrorContext } from './config-error.js';
export { configTableMarkdown, withConfigTable } from './config-table.js';
export {
  type ConfigKeyInfo,
  configKeys,
  envVarFor,
  type LogLevel,
  logLevels,
  type LoomRole,
  loomRoles,
  type ServiceName,
  serviceNames,
  type UpdatePolicy,
  updatePolicies,
} from './config-keys.js';
export {
  loadConfig,
  type LoadConfigOptions,
  type GraphSsoConfig,
  graphSsoSettings,
  type LoomConfig,
  resolveConfig,
  type ResolvedConfig,
  type TlsConfig,
  tlsFiles,
} from './load-config.js';
export { type ServiceEndpoint } from './config-tree.js';
