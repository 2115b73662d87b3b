import { defineLoomTestConfig } from '../../vitest.shared.js';

// the CLI's tests compose `loom serve` in their own process, and its executor's isolated-vm asks for --no-node-snapshot
// on Node 20 and later. A worker runs its test files one after another on the modules it loaded (vitest's
// isolate: false): alone, 120–140 s and about 165 CPU-s against 154 s and 216 CPU-s isolated, all 165 tests passing in
// five runs (four shuffled). Not SHARED_MODULES, for the reason services/executor's config gives.
export default defineLoomTestConfig({ isolate: false, poolOptions: { forks: { execArgv: ['--no-node-snapshot'] } } });
