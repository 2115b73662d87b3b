import { defineLoomTestConfig, SHARED_MODULES } from '../../vitest.shared.js';

export default defineLoomTestConfig(SHARED_MODULES);
