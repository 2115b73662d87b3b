/** Where a configuration problem was found and for which key, when known. */
export interface ConfigErrorContext {
  readonly key?: string;
  readonly source?: string;
  readonly cause?: unknown;
}

/** A configuration value, file or override that loom cannot use; the process must not start. */
export class ConfigError extends Error {
  /** The configuration key at fault, e.g. `server.port`. */
  readonly key?: string;
  /** Where the bad value came from, e.g. `environment variable SERVER_PORT`. */
  readonly source?: string;

  constructor(message: string, context: ConfigErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.name = 'ConfigError';
    if (context.key !== undefined) this.key = context.key;
    if (context.source !== undefined) this.source = context.source;
  }
}
