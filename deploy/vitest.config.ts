import { defineLoomTestConfig } from '../vitest.shared.js';

// The topology and production-install tests start several loom processes: generous deadlines
// for a loaded machine (they poll for outcomes; nothing asserts on elapsed time).
export default defineLoomTestConfig({ testTimeout: 300_000, hookTimeout: 300_000 });
