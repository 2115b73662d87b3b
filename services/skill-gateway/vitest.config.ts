import { defineLoomTestConfig } from '../../vitest.shared.js';

// every suite starts an embedded PostgreSQL (PGlite), which takes tens of seconds on a loaded machine
export default defineLoomTestConfig({ hookTimeout: 120_000 });
