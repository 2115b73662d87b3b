/** How a command prints its result. */
export type OutputFormat = 'text' | 'json';

/** Prints rows as an aligned text table or as a JSON document. */
export function printTable(format: OutputFormat, rows: readonly Record<string, string | number | boolean>[], json: unknown = rows): void {
  if (format === 'json') {
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
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
  process.stdout.write(`${line(columns.map((column) => column.toUpperCase()))}\n`);
  for (const row of rows) process.stdout.write(`${line(columns.map((column) => String(row[column])))}\n`);
}
