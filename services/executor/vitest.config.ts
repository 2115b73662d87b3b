import { defineLoomTestConfig } from '../../vitest.shared.js';

// isolated-vm asks for --no-node-snapshot on Node 20 and later; --expose-gc lets the back-pressure test measure retained memory
export default defineLoomTestConfig({ poolOptions: { forks: { execArgv: ['--no-node-snapshot', '--expose-gc'] } } });
