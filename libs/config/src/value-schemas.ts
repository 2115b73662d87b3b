import { z } from 'zod';

/**
 * Zod schemas for single configuration values. Every schema accepts the string form that
 * environment variables, properties files and `--set` produce, and the typed form YAML
 * produces, and coerces strictly: no "yes", no "1.0" for an integer, no trimming.
 */

const INTEGER_TEXT = /^-?\d+$/;
const NUMBER_TEXT = /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;
const BASE64_TEXT = /^[A-Za-z0-9+/]+={0,2}$/;
// host name, IPv4 address or bracketed IPv6 address, then a port
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/;
// bearer tokens travel in an HTTP/2 header, so printable ASCII without spaces only
const TOKEN_TEXT = /^[\x21-\x7e]{16,}$/;

/** The number of bytes a key-ring key must decode to (AES-256). */
export const KEY_BYTES = 32;

/** An integer in [min, max], from a number or its decimal text. */
export function integer(min: number, max: number = Number.MAX_SAFE_INTEGER): z.ZodType<number, unknown> {
  return z.union([z.int(), z.string().regex(INTEGER_TEXT).transform(Number)]).pipe(z.int().min(min).max(max));
}

/** A finite number in [min, max], from a number or its decimal text. */
export function decimal(min: number, max: number): z.ZodType<number, unknown> {
  return z.union([z.number(), z.string().regex(NUMBER_TEXT).transform(Number)]).pipe(z.number().min(min).max(max));
}

/** `true` or `false`, from a boolean or exactly that text. */
export function boolean(): z.ZodType<boolean, unknown> {
  return z.union([z.boolean(), z.enum(['true', 'false']).transform((text) => text === 'true')]);
}

/** A string that is not empty. */
export function nonEmptyString(): z.ZodType<string, unknown> {
  return z.string().min(1);
}

/** One of the given words. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T): z.ZodType<T[number], unknown> {
  return z.enum(values);
}

/** A postgres:// or postgresql:// URL. */
export function postgresUrl(): z.ZodType<string, unknown> {
  return z.url({ protocol: /^postgres(ql)?$/ });
}

/** An http:// or https:// URL. */
export function httpUrl(): z.ZodType<string, unknown> {
  return z.url({ protocol: /^https?$/ });
}

/** `host:port` with a port from 1 to 65535. */
export function hostPort(): z.ZodType<string, unknown> {
  return z
    .string()
    .regex(HOST_PORT)
    .refine((text) => {
      const port = Number(text.slice(text.lastIndexOf(':') + 1));
      return port >= 1 && port <= 65535;
    });
}

/** Base64 text that decodes to exactly {@link KEY_BYTES} bytes. */
export function base64Key(): z.ZodType<string, unknown> {
  return z.string().refine((text) => {
    if (!BASE64_TEXT.test(text)) return false;
    const bytes = Buffer.from(text, 'base64');
    // Buffer.from ignores stray bits and missing padding; re-encoding catches text that is not canonical
    return bytes.length === KEY_BYTES && bytes.toString('base64').replace(/=+$/, '') === text.replace(/=+$/, '');
  });
}

/** A bearer token: at least 16 printable ASCII characters, no spaces. */
export function token(): z.ZodType<string, unknown> {
  return z.string().regex(TOKEN_TEXT);
}

/** The schema, or an empty string meaning "not set" (so a higher layer can unset a value). */
export function optional<T>(schema: z.ZodType<T, unknown>): z.ZodType<T | undefined, unknown> {
  return z.union([z.literal('').transform(() => undefined), schema]);
}

/** A comma-separated list of words from `values` (`editor,operator`), at least one; read as the words, each once. */
export function listOf<const T extends readonly string[]>(values: T): z.ZodType<T[number][], unknown> {
  const word = `(?:${values.join('|')})`;
  return z
    .string()
    .regex(new RegExp(`^\\s*${word}\\s*(?:,\\s*${word}\\s*)*$`))
    .transform((text) => [...new Set(text.split(',').map((item) => item.trim() as T[number]))]);
}

/** JSON text of an object (`{"a": 1}`), read as that object. */
export function jsonObject(): z.ZodType<Readonly<Record<string, unknown>>, unknown> {
  return z.string().transform((text, context) => {
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // not JSON: reported below as any other text that is not an object, and the key's error says what is expected
    }
    context.addIssue({ code: 'custom', message: 'expected JSON text of an object' });
    return z.NEVER;
  });
}

const NATS_PROTOCOLS = new Set(['nats:', 'tls:']);

/**
 * A comma-separated list of nats:// or tls:// URLs (`nats://a:4222, nats://b:4222`), at least one; read as the URLs.
 * No user or password in them: a list of servers is no secret, the credentials have keys of their own.
 */
export function natsUrls(): z.ZodType<string[], unknown> {
  return z.string().transform((text, context) => {
    const urls = text.split(',').map((item) => item.trim());
    const valid = urls.every((url) => {
      if (!URL.canParse(url)) return false;
      const { protocol, username, password, hostname, pathname, search, hash } = new URL(url);
      const bare = username === '' && password === '' && (pathname === '' || pathname === '/') && search === '' && hash === '';
      return NATS_PROTOCOLS.has(protocol) && hostname !== '' && bare;
    });
    if (valid) return urls;
    context.addIssue({ code: 'custom', message: 'expected nats:// or tls:// URLs' });
    return z.NEVER;
  });
}

/** PEM text with at least one block of the given label (`CERTIFICATE`, or `PRIVATE KEY` for any private key). */
export function pem(label: 'CERTIFICATE' | 'PRIVATE KEY'): z.ZodType<string, unknown> {
  const block = new RegExp(`-----BEGIN [A-Z ]*${label}-----[\\s\\S]+?-----END [A-Z ]*${label}-----`);
  return z.string().regex(block);
}

/** The content of a NATS credentials (.creds) file: a user JWT and the user's nkey seed, each in its armour. */
export function natsCredentials(): z.ZodType<string, unknown> {
  return z
    .string()
    .regex(/-----BEGIN NATS USER JWT-----\s*\S+\s*-+END NATS USER JWT-+/)
    .regex(/-----BEGIN USER NKEY SEED-----\s*SU[A-Z2-7]+\s*-+END USER NKEY SEED-+/);
}
