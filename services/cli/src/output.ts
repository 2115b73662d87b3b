import { cliIo } from './cli-io.js';

/** How a command prints its result. */
export type OutputFormat = 'text' | 'json';

/** Prints rows as an aligned text table or as a JSON document. */
export function printTable(format: OutputFormat, rows: readonly Record<string, string | number | boolean>[], json: unknown = rows): void {
  const { stdout } = cliIo();
  if (format === 'json') {
    stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    return;
  }
  const [first] = rows;
  if (first === undefined) return;
  const columns = Object.keys(first);
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => String(row[column]).length)));
  const line = (values: string[]): string =>
    values
      .map((value, i) => value.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  stdout.write(`${line(columns.map((column) => column.toUpperCase()))}\n`);
  for (const row of rows) stdout.write(`${line(columns.map((column) => String(row[column])))}\n`);
}

/** Exit code when loom's output can no longer be written: 128 + SIGPIPE, as a shell reports a tool a closed pipe ended. */
export const EXIT_OUTPUT_CLOSED = 141;

/**
 * Ends the process with EXIT_OUTPUT_CLOSED as soon as standard output or error fails (`loom … | head` closed the
 * pipe), the way a closed pipe ends a Unix tool: the rest of the output has nowhere to go, and an unhandled stream
 * error would print a stack trace instead.
 */
export function exitWhenOutputCloses(): void {
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => process.exit(EXIT_OUTPUT_CLOSED));
}

/**
 * Resolves once everything written to the stream so far has reached the operating system, or the stream has failed
 * or closed. Into a pipe or socket, writes are asynchronous: exiting before this loses their tail.
 */
export function drained(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('error', done);
      stream.off('close', done);
      resolve();
    };
    stream.once('error', done);
    stream.once('close', done);
    // writes complete in order, so an empty write's callback runs once every earlier write has been handed over
    stream.write('', done);
  });
}

/** Ends the process with the exit code once standard output and standard error have drained: every command exits here. */
export async function exitAfterOutput(code: number): Promise<never> {
  await Promise.all([drained(process.stdout), drained(process.stderr)]);
  process.exit(code);
}
