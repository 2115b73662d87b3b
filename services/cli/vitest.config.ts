import { defineLoomTestConfig } from '../../vitest.shared.js';

// the CLI's tests compose `loom serve` in their own process, and its executor's isolated-vm asks for --no-node-snapshot
// on Node 20 and later
export default defineLoomTestConfig({ poolOptions: { forks: { execArgv: ['--no-node-snapshot'] } } });
