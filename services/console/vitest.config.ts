import { defineLoomTestConfig } from '../../vitest.shared.js';

export default defineLoomTestConfig();
