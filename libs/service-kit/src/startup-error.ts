import { ConfigError } from '@loom/config';

/** One line for an error that stopped the process from starting. */
export function describeStartupError(error: unknown): string {
  if (error instanceof ConfigError) return `invalid configuration: ${error.message}`;
  const message = error instanceof Error ? error.message : String(error);
  return `failed to start: ${message}`;
}
