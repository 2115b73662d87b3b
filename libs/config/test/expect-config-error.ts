import { expect } from 'vitest';
import { ConfigError } from '../src/index.js';

/** Runs the function and returns the ConfigError it throws. */
export function configError(load: () => unknown): ConfigError {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}
