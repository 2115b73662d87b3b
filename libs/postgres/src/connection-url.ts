import { ValidationError } from '@loom/domain';

/** What a PostgreSQL URL points at, without its credentials. */
export interface DatabaseTarget {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  /** `host:port/database`, safe for messages and logs. */
  readonly address: string;
  /** The password in the URL (decoded), or '' when there is none. */
  readonly password: string;
}

/** Parses a `postgresql://` or `postgres://` URL; a malformed one is a ValidationError that does not echo the URL. */
export function parseDatabaseUrl(url: string): DatabaseTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw ValidationError.of('url', 'not a valid PostgreSQL URL (postgresql://user[:password]@host[:port]/database)');
  }
  if (parsed.protocol !== 'postgresql:' && parsed.protocol !== 'postgres:') {
    throw ValidationError.of('url', `a PostgreSQL URL starts with postgresql:// (got ${parsed.protocol}//)`);
  }
  // pg reads a unix-socket directory from ?host= when the URL has no host part
  const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
  const port = parsed.port === '' ? 5432 : Number(parsed.port);
  const database = decodeURIComponent(parsed.pathname.slice(1)) || 'postgres';
  return { host, port, database, address: `${host}:${port}/${database}`, password: decodeURIComponent(parsed.password) };
}

/** Replaces every occurrence of the password (raw and URL-encoded) in a text with `***`. */
export function redactPassword(text: string, password: string): string {
  if (password === '') return text;
  let redacted = text.split(password).join('***');
  const encoded = encodeURIComponent(password);
  if (encoded !== password) redacted = redacted.split(encoded).join('***');
  return redacted;
}
