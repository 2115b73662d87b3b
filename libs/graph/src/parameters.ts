import { FailedPreconditionError, ValidationError, isSealed } from '@loom/domain';

/** Where and how to reach a Neo4j database, from the resource's parameters. */
export interface Neo4jConnection {
  /** `scheme://host:port[?routing context]`, without credentials. */
  readonly url: string;
  readonly user: string;
  readonly password: string;
  /** The database to use; undefined: the user's home database. */
  readonly database: string | undefined;
  readonly readOnly: boolean;
}

/** Where and how to reach PostgreSQL with Apache AGE, from the resource's parameters. */
export interface AgeConnection {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string;
  /** The AGE graph; a checked identifier, since it is written into the SQL text. */
  readonly graph: string;
  readonly readOnly: boolean;
}

const NEO4J_SCHEMES = new Set(['bolt', 'bolt+s', 'bolt+ssc', 'neo4j', 'neo4j+s', 'neo4j+ssc']);
const NEO4J_DEFAULT_PORT = 7687;
const POSTGRES_DEFAULT_PORT = 5432;
// AGE names a schema after the graph: an identifier of at most 63 bytes, and AGE itself wants at least 3 characters
const GRAPH_NAME = /^[A-Za-z_][A-Za-z0-9_]{2,62}$/;

/** Reads a Neo4j resource's parameters; a wrong one is a ValidationError naming `parameters.<name>`. */
export function neo4jConnection(parameters: Readonly<Record<string, unknown>>): Neo4jConnection {
  const read = new ParameterReader(parameters);
  const host = read.requiredString('host');
  const port = read.port('port');
  const user = read.requiredString('user');
  const password = read.password('password');
  const database = read.optionalString('database');
  const readOnly = read.boolean('read_only');

  let url: string;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(host)) {
    let parsed: URL;
    try {
      parsed = new URL(host);
    } catch {
      throw ValidationError.of('parameters.host', 'is not a valid URI (bolt://host:port, neo4j://host:port, ...)');
    }
    const scheme = parsed.protocol.slice(0, -1).toLowerCase();
    if (!NEO4J_SCHEMES.has(scheme)) {
      throw ValidationError.of('parameters.host', `has the scheme ${scheme}://; use one of ${[...NEO4J_SCHEMES].map((name) => `${name}://`).join(', ')}`);
    }
    if (parsed.username !== '' || parsed.password !== '') {
      throw ValidationError.of('parameters.host', 'must not carry credentials; put them in parameters.user and parameters.password');
    }
    if (parsed.hostname === '' || (parsed.pathname !== '' && parsed.pathname !== '/')) {
      throw ValidationError.of('parameters.host', 'must be scheme://host[:port] without a path');
    }
    const uriPort = parsed.port === '' ? NEO4J_DEFAULT_PORT : Number(parsed.port);
    url = `${scheme}://${parsed.hostname}:${port ?? uriPort}${parsed.search}`;
  } else {
    checkHostName(host);
    // a bare host is one server: bolt:// talks to it directly; a cluster takes a neo4j:// URI (routing)
    url = `bolt://${bracketed(host)}:${port ?? NEO4J_DEFAULT_PORT}`;
  }
  return { url, user, password, database, readOnly };
}

/** Reads an AGE resource's parameters; a wrong one is a ValidationError naming `parameters.<name>`. */
export function ageConnection(parameters: Readonly<Record<string, unknown>>): AgeConnection {
  const read = new ParameterReader(parameters);
  const host = read.requiredString('host');
  checkHostName(host);
  const port = read.port('port') ?? POSTGRES_DEFAULT_PORT;
  const user = read.requiredString('user');
  // optional for AGE: the embedded graph and trust-authenticated servers take none
  const password = read.optionalPassword('password');
  const database = read.optionalString('database') ?? 'postgres';
  const graph = read.requiredString('graph');
  checkGraphName(graph);
  return { host, port, user, password, database, graph, readOnly: read.boolean('read_only') };
}

/** Throws a ValidationError naming `parameters.graph` unless the name is an identifier AGE accepts. */
export function checkGraphName(graph: string): void {
  if (!GRAPH_NAME.test(graph)) {
    throw ValidationError.of('parameters.graph', 'must be an identifier of 3 to 63 characters (letters, digits, _; not starting with a digit)');
  }
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Refuses a label or property name that is not a plain identifier: it is written into statement text. */
export function checkIdentifier(name: string, field: string): void {
  if (!IDENTIFIER.test(name)) throw ValidationError.of(field, 'must be an identifier of at most 63 characters (letters, digits, _; not starting with a digit)');
}

/** Puts an IPv6 address in brackets for a URL. */
export function bracketed(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

function checkHostName(host: string): void {
  if (/[\s/@?#]/.test(host)) throw ValidationError.of('parameters.host', 'must be a host name or address (no spaces, /, @, ? or #)');
}

class ParameterReader {
  constructor(private readonly parameters: Readonly<Record<string, unknown>>) {}

  requiredString(name: string): string {
    const value = this.string(name);
    if (value === undefined || value === '') throw ValidationError.of(`parameters.${name}`, 'is required (a non-empty string)');
    return value;
  }

  optionalString(name: string): string | undefined {
    const value = this.string(name);
    return value === '' ? undefined : value;
  }

  password(name: string): string {
    const value = this.string(name);
    if (value === undefined) throw ValidationError.of(`parameters.${name}`, 'is required (a string)');
    return value;
  }

  optionalPassword(name: string): string {
    return this.string(name) ?? '';
  }

  port(name: string): number | undefined {
    const value = this.parameters[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
      throw ValidationError.of(`parameters.${name}`, 'must be an integer 1..65535');
    }
    return value;
  }

  boolean(name: string): boolean {
    const value = this.parameters[name];
    if (value === undefined || value === null) return false;
    if (typeof value !== 'boolean') throw ValidationError.of(`parameters.${name}`, 'must be a boolean (true or false)');
    return value;
  }

  private string(name: string): string | undefined {
    const value = this.parameters[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw ValidationError.of(`parameters.${name}`, 'must be a string');
    // the value itself is never echoed: it may be (a reference to) a secret
    if (isSealed(value)) throw new FailedPreconditionError(`parameters.${name} is still sealed: the resource must be decrypted before a graph store is opened`);
    return value;
  }
}
