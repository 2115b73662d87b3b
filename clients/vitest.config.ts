import { defineLoomTestConfig } from '../vitest.shared.js';

// pytest and `go test` run as child processes against one loom; the first `go test` on a machine links its binary
export default defineLoomTestConfig({ testTimeout: 300_000 });
