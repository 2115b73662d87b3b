import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { AddressPolicy, AddressRefusedError, type FetchLimits, safeFetch, SkillError } from '../src/index.js';

const limits: FetchLimits = { maxRedirects: 3, maxBytes: 64 * 1024, timeoutMs: 2000 };
const servers: Server[] = [];
const requests: string[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  requests.length = 0;
});

/** A loopback web server with a few pages; resolves with its port. */
async function site(host = '127.0.0.1'): Promise<number> {
  const server = createServer((request, response) => {
    requests.push(request.url ?? '');
    const url = new URL(request.url ?? '/', 'http://x');
    switch (url.pathname) {
      case '/page':
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<html><body><p>hello</p></body></html>');
        return;
      case '/gzip':
        response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(gzipSync('<p>zipped</p>'));
        return;
      case '/bomb':
        response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(10 * 1024 * 1024, 32)));
        return;
      case '/large':
        response.writeHead(200, { 'content-type': 'text/html' }).end('x'.repeat(100 * 1024));
        return;
      case '/image':
        response.writeHead(200, { 'content-type': 'image/png' }).end('png');
        return;
      case '/missing':
        response.writeHead(404, { 'content-type': 'text/html' }).end('no');
        return;
      case '/slow':
        setTimeout(() => response.writeHead(200, { 'content-type': 'text/html' }).end('late'), 5000).unref();
        return;
      case '/redirect':
        response.writeHead(302, { location: url.searchParams.get('to') ?? '/page' }).end();
        return;
      case '/loop':
        response.writeHead(302, { location: '/loop' }).end();
        return;
      default:
        response.writeHead(404).end();
    }
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

const open = new AddressPolicy(['127.0.0.1', 'localhost']);
const fetchWith = (url: string, policy = open, accept = ['text/html']) => safeFetch(url, { policy, limits, accept, field: 'url' });

async function failure(promise: Promise<unknown>): Promise<SkillError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SkillError) return error;
    throw error;
  }
  throw new Error('expected a SkillError');
}

describe('safeFetch', () => {
  it('fetches an allowed loopback page, following a redirect', async () => {
    const port = await site();
    const page = await fetchWith(`http://127.0.0.1:${port}/redirect`);
    expect(page.url).toBe(`http://127.0.0.1:${port}/page`);
    expect(page.mediaType).toBe('text/html');
    expect(page.charset).toBe('utf-8');
    expect(page.body.toString()).toContain('hello');
    expect((await fetchWith(`http://localhost:${port}/gzip`)).body.toString()).toBe('<p>zipped</p>');
  });

  it.each(['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '[::1]', 'localhost'])(
    'refuses %s by default, before any connection',
    async (host) => {
      const error = await failure(fetchWith(`http://${host}:9/page`, new AddressPolicy()));
      expect(error).toBeInstanceOf(AddressRefusedError);
      expect(error.toBody()).toMatchObject({ error: 'address_refused', field: 'url' });
    },
  );

  it('refuses a redirect from an allowed host to a refused address, checked after the redirect', async () => {
    const target = await site();
    const port = await site();
    const policy = new AddressPolicy(['localhost']);
    const error = await failure(fetchWith(`http://localhost:${port}/redirect?to=${encodeURIComponent(`http://127.0.0.1:${target}/page`)}`, policy));
    expect(error).toBeInstanceOf(AddressRefusedError);
    expect(requests).toEqual(['/redirect?to=' + encodeURIComponent(`http://127.0.0.1:${target}/page`)]);
  });

  it('caps redirects, size (after decompression), time and media type', async () => {
    const port = await site();
    const base = `http://127.0.0.1:${port}`;
    expect((await failure(fetchWith(`${base}/loop`))).code).toBe('too_many_redirects');
    expect((await failure(fetchWith(`${base}/large`))).status).toBe(413);
    expect((await failure(fetchWith(`${base}/bomb`))).status).toBe(413);
    expect((await failure(fetchWith(`${base}/slow`))).code).toBe('fetch_timeout');
    expect((await failure(fetchWith(`${base}/image`))).code).toBe('unsupported_content_type');
    expect((await failure(fetchWith(`${base}/missing`))).code).toBe('fetch_failed');
    expect((await failure(fetchWith('ftp://example.org/x'))).code).toBe('invalid_url');
    expect((await failure(fetchWith('not a url'))).code).toBe('invalid_url');
  });
});
