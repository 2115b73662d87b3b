import { readFileSync } from 'node:fs';
import { isSealed, parseJsonText, secretReference } from '@loom/domain';
import type { GraphRecord, GraphResource } from '@loom/graph';
import { ExecutorClient } from '@loom/contracts';
import { call } from '@loom/service-kit/client';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type GlobalOptions } from '../global-options.js';
import { UsageError } from '../usage-error.js';
import { printTable } from '../output.js';
import { withClient } from '../service-client.js';
import { loadToken } from '../token-cache.js';
import { cliIo, inputPath } from '../cli-io.js';

/** The host of an AGE resource served by `loom serve` itself, which the CLI cannot reach by that name. */
const EMBEDDED_HOST = 'embedded';

/** Reads a resource file: a resource instance as in a workflow file (`resource.qualifiedName` and `parameters`). */
function readResource(file: string): GraphResource {
  let text: string;
  try {
    text = readFileSync(inputPath(file), 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = parseJsonText(text);
  } catch (error) {
    throw new UsageError(`${file} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const candidate = parsed as { resource?: { qualifiedName?: unknown }; parameters?: unknown };
  if (typeof candidate.resource?.qualifiedName !== 'string' || typeof candidate.parameters !== 'object' || candidate.parameters === null) {
    throw new UsageError(`${file}: expected a resource instance with resource.qualifiedName and parameters, as in a workflow file`);
  }
  return { resource: { qualifiedName: candidate.resource.qualifiedName }, parameters: candidate.parameters as Record<string, unknown> };
}

/** The password: from standard input when asked, else the file's own; a sealed value or a $$ reference cannot be opened here. */
function withPassword(resource: GraphResource, passwordStdin: boolean): GraphResource {
  if (passwordStdin) {
    const { stdin } = cliIo();
    if (stdin.isTTY) throw new UsageError('--password-stdin: pipe the password in on standard input');
    const password = stdin.readText().replace(/\r?\n$/, '');
    return { ...resource, parameters: { ...resource.parameters, password } };
  }
  const password = resource.parameters.password;
  if (isSealed(password) || secretReference(password) !== undefined) {
    throw new UsageError('the resource password is sealed or a $$ reference, which only the executor opens; give it with --password-stdin');
  }
  return resource;
}

function parameter(value: string, previous: Record<string, unknown> = {}): Record<string, unknown> {
  const at = value.indexOf('=');
  if (at < 1) throw new InvalidArgumentError('expected name=value, the value as JSON (or as text when it is not JSON)');
  const text = value.slice(at + 1);
  let parsed: unknown;
  try {
    parsed = parseJsonText(text);
  } catch {
    parsed = text;
  }
  return { ...previous, [value.slice(0, at)]: parsed };
}

function cell(value: GraphRecord[string]): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

interface GraphQueryOptions {
  resource?: string;
  sso: boolean;
  accessToken?: string;
  write: boolean;
  param?: Record<string, unknown>;
  params?: Record<string, unknown>;
  columns?: string;
  passwordStdin: boolean;
  graph?: string;
  workflow?: string;
  resourceName?: string;
  limit?: number;
  timeout?: number;
}

/** Seconds a ReadGraph call waits beyond the query's own time limit (the server answers DEADLINE_EXCEEDED by then). */
const CALL_SLACK_SECONDS = 10;

/** `--params`: a JSON object. */
function parametersObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseJsonText(value);
  } catch (error) {
    throw new InvalidArgumentError(`not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError('expected a JSON object, e.g. {"n": 5}');
  return parsed as Record<string, unknown>;
}

function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) throw new InvalidArgumentError('expected a whole number, at least 1');
  return number;
}

function positiveSeconds(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new InvalidArgumentError('expected a number of seconds above 0, e.g. 2.5');
  return seconds;
}

/**
 * Without --sso or --resource: the executor's ReadGraph runs the statement read-only, as loom, on the embedded graph
 * (`--graph`, or its only graph) or a stored workflow's graph database resource (`--workflow`, `--resource-name`).
 */
async function readGraph(cypher: string, options: GraphQueryOptions, command: Command, globals: GlobalOptions): Promise<void> {
  if (options.workflow === undefined && options.resourceName !== undefined)
    throw new UsageError('--resource-name names a resource of --workflow: give --workflow too');
  if (options.workflow !== undefined && options.graph !== undefined)
    throw new UsageError("--graph and --workflow exclude each other: a workflow's resource names its graph");
  const parameters = { ...options.params, ...options.param };
  const timeoutSeconds = options.timeout;
  const answer = await withClient(command, ExecutorClient, async (client) => {
    const graph = options.workflow === undefined ? (options.graph ?? (await onlyEmbeddedGraph(client))) : '';
    return call(
      client,
      'readGraph',
      {
        query: cypher,
        parameters,
        graph,
        workflow: options.workflow ?? '',
        resource: options.resourceName ?? '',
        maxRows: options.limit ?? 0,
        timeout: timeoutSeconds === undefined ? undefined : { seconds: Math.floor(timeoutSeconds), nanos: Math.round((timeoutSeconds % 1) * 1e9) },
        columns: options.columns?.split(',').map((column) => column.trim()) ?? [],
      },
      { deadlineMs: ((timeoutSeconds ?? 10) + CALL_SLACK_SECONDS) * 1000 },
    );
  });
  const records = answer.rows as GraphRecord[];
  printTable(
    globals.output,
    records.map((record) => Object.fromEntries(Object.entries(record).map(([column, value]) => [column, cell(value)]))),
    answer,
  );
  if (globals.output === 'text') {
    const count = `${records.length} record${records.length === 1 ? '' : 's'}`;
    cliIo().stderr.write(answer.truncated ? `${count}, truncated: the query has more (raise --limit, at most 10000)\n` : `${count}\n`);
  }
}

/** The embedded graph's only AGE graph, asked of the executor (DescribeGraph); a usage error naming them when it has several or none. */
async function onlyEmbeddedGraph(client: ExecutorClient): Promise<string> {
  const described = await call(client, 'describeGraph', {});
  const [only, ...others] = described.graphs;
  if (only !== undefined && others.length === 0) return only;
  if (only === undefined) {
    throw new UsageError(
      described.running
        ? 'the embedded graph has no graph yet: a workflow writes one (an AGE resource with host embedded); give --graph NAME'
        : 'the embedded graph has not started yet (a workflow starts it at first use): give --graph NAME',
    );
  }
  throw new UsageError(`the embedded graph holds ${described.graphs.length} graphs (${described.graphs.join(', ')}): give --graph NAME`);
}

/** `--sso`: the executor's QueryGraph runs the statement as the user of the access token. */
async function ssoQuery(cypher: string, options: GraphQueryOptions, command: Command, globals: GlobalOptions): Promise<void> {
  const accessToken = options.accessToken ?? loadToken()?.accessToken;
  if (accessToken === undefined) throw new UsageError('--sso needs your access token: run loom login, or give --access-token');
  const answer = await withClient(command, ExecutorClient, (client) =>
    call(client, 'queryGraph', { query: cypher, parameters: { ...options.params, ...options.param }, accessToken, write: options.write }),
  );
  const records = answer.rows as GraphRecord[];
  printTable(
    globals.output,
    records.map((record) => Object.fromEntries(Object.entries(record).map(([column, value]) => [column, cell(value)]))),
    answer,
  );
  if (globals.output === 'text') cliIo().stderr.write(`${records.length} record${records.length === 1 ? '' : 's'} as ${answer.user}\n`);
}

/** `loom graph query`: Cypher against a graph database resource, for operators. */
export function addGraphCommands(program: Command): void {
  program
    .command('graph')
    .description('graph databases (Neo4j, PostgreSQL with Apache AGE)')
    .command('query')
    .description(
      "run a read-only Cypher statement on loom's embedded graph or a workflow's graph resource, through loom (or with --resource FILE, on a database directly) and print its records",
    )
    .argument('<cypher>', 'the statement, e.g. "MATCH (n) RETURN count(n) AS nodes"')
    .option('--graph <name>', "the embedded graph's AGE graph (default: its only one), e.g. knowledge_graph")
    .option('--workflow <name>', 'read the graph database resource of this stored workflow instead (Neo4j, PostgreSQL with AGE or embedded)')
    .option('--resource-name <name>', "with --workflow: the resource's name in it (default: its only graph database resource)")
    .option('--params <json>', 'the parameters as one JSON object, e.g. \'{"n": 5}\' (--param wins for a name in both)', parametersObject)
    .option('--limit <rows>', 'most records to print (server default 1000, at most 10000); the rest are left unread and it says so', positiveInteger)
    .option('--timeout <seconds>', 'longest the query may run (server default 10, at most 300)', positiveSeconds)
    .option('--resource <file>', 'run on the database of a resource instance as JSON (resource.qualifiedName and parameters), as in a workflow file, from here')
    .option('--sso', "run on loom's single sign-on graph database as yourself (the token of loom login, or --access-token), through loom", false)
    .addOption(new Option('--access-token <token>', 'with --sso: your access token from the identity provider').env('LOOM_ACCESS_TOKEN'))
    .option('--write', 'with --sso: open the session for writing (READ otherwise)', false)
    .option('--param <name=value>', 'a parameter, $name in the statement; the value as JSON (repeatable)', parameter)
    .option('--columns <names>', 'return columns, comma-separated (AGE needs them when the RETURN clause does not name them)')
    .option('--password-stdin', 'read the password from standard input (for a sealed or $$ password)', false)
    .action(async (cypher: string, options: GraphQueryOptions, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      if (options.sso) {
        if (options.resource !== undefined) throw new UsageError('--sso and --resource exclude each other: --sso runs on the database loom is configured for');
        await ssoQuery(cypher, options, command, globals);
        return;
      }
      if (options.resource === undefined) {
        if (options.write) throw new UsageError('--write is for --sso: loom reads its graphs read-only');
        await readGraph(cypher, options, command, globals);
        return;
      }
      const resource = withPassword(readResource(options.resource), options.passwordStdin);
      if (resource.parameters.host === EMBEDDED_HOST) {
        throw new UsageError(
          "host 'embedded' is the graph `loom serve` runs in its own process: use host 127.0.0.1 and the port it logged ('embedded graph … started')",
        );
      }
      // the graph drivers load only for this command
      const { openGraphStore } = await import('@loom/graph');
      const store = openGraphStore(resource);
      try {
        const columns = options.columns?.split(',').map((column) => column.trim());
        const records = await store.run(cypher, { ...options.params, ...options.param }, columns === undefined ? {} : { columns });
        printTable(
          globals.output,
          records.map((record) => Object.fromEntries(Object.entries(record).map(([column, value]) => [column, cell(value)]))),
          records,
        );
        if (globals.output === 'text') cliIo().stderr.write(`${records.length} record${records.length === 1 ? '' : 's'}\n`);
      } finally {
        await store.close();
      }
    });
}
