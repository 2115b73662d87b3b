import { defineLoomTestConfig } from '../../vitest.shared.js';

// isolated-vm asks for --no-node-snapshot on Node 20 and later; --expose-gc lets the back-pressure test measure retained
// memory. A worker runs its test files one after another on the modules it loaded (vitest's isolate: false): the
// project took 134–146 s and 186–201 CPU-s alone, against 183 s and 280 CPU-s isolated, on these 2-core machines. It
// holds because no test fakes the process's timers: the timer source keeps time by its context's clock, which its
// tests move by hand (test/sources.test.ts). Not SHARED_MODULES: that name puts a project among the early ones beside
// the lint (scripts/test-times.mjs), which suits small libraries, not the executor's servers.
export default defineLoomTestConfig({ isolate: false, poolOptions: { forks: { execArgv: ['--no-node-snapshot', '--expose-gc'] } } });
