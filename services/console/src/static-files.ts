import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { SECURITY_HEADERS } from './http-errors.js';

/** Where the pages are built (Vite writes them there: web/build.mjs), beside the backend's own dist files. */
export const DEFAULT_STATIC_DIRECTORY = fileURLToPath(new URL('../dist/web/', import.meta.url));

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

interface StaticFile {
  readonly body: Buffer;
  /** Present when compressing saves something. */
  readonly gzip?: Buffer;
  readonly type: string;
  readonly etag: string;
  /** Hashed names (assets/) never change: a browser keeps them a year; index.html is checked each time. */
  readonly immutable: boolean;
}

/** The built pages, read once at start into memory (a few hundred KiB) and answered with gzip when the browser takes it. */
export class StaticFiles {
  private readonly files = new Map<string, StaticFile>();

  constructor(readonly directory: string) {
    if (!existsSync(directory) || !statSync(directory).isDirectory()) return;
    for (const path of walk(directory)) {
      const name = `/${relative(directory, path).split(sep).join('/')}`;
      if (name.split('/').some((part) => part.startsWith('.'))) continue;
      const body = readFileSync(path);
      const type = TYPES[extname(path)] ?? 'application/octet-stream';
      const compressible = /^(text\/|application\/json|image\/svg)/.test(type) && body.length > 512;
      const gzip = compressible ? gzipSync(body, { level: 9 }) : undefined;
      this.files.set(name, {
        body,
        ...(gzip !== undefined && gzip.length < body.length ? { gzip } : {}),
        type,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
        immutable: name.startsWith('/assets/'),
      });
    }
  }

  /** Whether the pages were built (index.html is there). */
  get built(): boolean {
    return this.files.has('/index.html');
  }

  /** The gzip sizes of the built files, by name (the docs give the bundle's size). */
  sizes(): { name: string; bytes: number; gzipBytes: number }[] {
    return [...this.files].map(([name, file]) => ({ name, bytes: file.body.length, gzipBytes: file.gzip?.length ?? file.body.length }));
  }

  /** Answers a GET or HEAD of a built file (`/` is index.html); false when there is no such file. */
  serve(request: IncomingMessage, response: ServerResponse, path: string): boolean {
    const file = this.files.get(path === '/' ? '/index.html' : path);
    if (file === undefined) return false;
    const headers: Record<string, string | number> = {
      ...SECURITY_HEADERS,
      'content-type': file.type,
      etag: file.etag,
      'cache-control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      vary: 'accept-encoding',
    };
    if (request.headers['if-none-match'] === file.etag) {
      response.writeHead(304, headers).end();
      return true;
    }
    const takesGzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
    const compressed = takesGzip ? file.gzip : undefined;
    const body = compressed ?? file.body;
    response.writeHead(200, { ...headers, 'content-length': body.length, ...(compressed === undefined ? {} : { 'content-encoding': 'gzip' }) });
    response.end(request.method === 'HEAD' ? undefined : body);
    return true;
  }
}

function walk(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(directory, entry.name)) : entry.isFile() ? [join(directory, entry.name)] : [],
  );
}
