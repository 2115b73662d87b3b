import { type OutputFormat } from './output.js';

/** Options every command understands. */
export interface GlobalOptions {
  readonly address: string;
  readonly output: OutputFormat;
  readonly token?: string;
}
