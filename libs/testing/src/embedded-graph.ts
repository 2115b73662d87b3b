import { AssertionError } from 'node:assert';
import { writeFileSync } from 'node:fs';

/** How a loom process's JSON log line that starts its embedded graph begins. */
const EMBEDDED_GRAPH_LOG = 'embedded graph';

/** The port of the embedded graph a loom process logged last, read from its JSON log lines; fails when it logged none. */
export function embeddedGraphPort(logLines: readonly string[]): number {
  const started = logLines.map((line) => JSON.parse(line) as { msg?: string; port?: number }).findLast((entry) => entry.msg?.startsWith(EMBEDDED_GRAPH_LOG));
  if (started?.port === undefined) throw new AssertionError({ message: `the process logged no '${EMBEDDED_GRAPH_LOG}' line with a port` });
  return started.port;
}

/**
 * Writes to `file` a resource file (an AgeDatabase on loopback) for the graph `graph` of the embedded graph a loom process
 * logged last, for `loom graph query --resource`; answers `file`.
 */
export function writeEmbeddedGraphResource(file: string, logLines: readonly string[], graph: string): string {
  const parameters = { host: '127.0.0.1', port: embeddedGraphPort(logLines), user: 'postgres', graph };
  writeFileSync(file, JSON.stringify({ resource: { qualifiedName: 'loom.resources.graph.AgeDatabase' }, parameters }));
  return file;
}

/** The arguments of `loom graph query` that print the rows `cypher` answers on the graph of a resource file, as JSON. */
export function graphQueryArguments(resourceFile: string, cypher: string): string[] {
  return ['graph', 'query', '--resource', resourceFile, '--output', 'json', cypher];
}
