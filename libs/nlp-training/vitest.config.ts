import { defineLoomTestConfig } from '../../vitest.shared.js';

// not SHARED_MODULES: its training tests hold a worker's CPU for long stretches; run with shared modules beside the
// other projects, one run's worker missed vitest's 60 s call to its main process (onTaskUpdate) and failed the run
export default defineLoomTestConfig();
