export { buildProgram, run } from './cli.js';
export { type GlobalOptions } from './global-options.js';
export { serviceModules, selectModules } from './modules.js';
export { checkHealth, type HealthRow } from './commands/health.js';
