export { buildProgram, run, type GlobalOptions } from './cli.js';
export { serviceModules, selectModules } from './modules.js';
export { checkHealth, type HealthRow } from './commands/health.js';
