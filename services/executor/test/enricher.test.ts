import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { COMPONENT_KINDS, ValidationError } from '@loom/domain';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { enricherFactory } from '../src/components/enricher.js';
import { loggerFactory } from '../src/components/logger.js';
import { type LoomMessage, type Processor } from '../src/runtime/component.js';
import { componentContext } from './component-context.js';

/** A processor's context, its logger writing JSON lines into `raw` (and parsed into `lines`). */
function contextFor(kind: string, options: Record<string, unknown>, name?: string) {
  return componentContext(kind, options, { ...(name === undefined ? {} : { name }), workflowName: 'enricher_test', onFail: 'throw' });
}

async function processor(kind: string, options: Record<string, unknown>, name?: string) {
  const built = contextFor(kind, options, name);
  const factory = kind === COMPONENT_KINDS.LOGGER ? loggerFactory : enricherFactory;
  const created = await factory.create(built.context);
  if (!('process' in created)) throw new Error('not a processor');
  processors.push(created);
  return { ...built, processor: created };
}

const message = (body: Record<string, unknown>, headers: Record<string, string> = {}): LoomMessage => ({
  id: `message-${Math.random().toString(16).slice(2)}`,
  body,
  headers,
});

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A loopback server playing the endpoint the enricher calls; `seen` records every request. */
let server: Server;
let base: string;
let seen: Seen[];
/** Requests to /pause under way now, and the most there ever were at once. */
let pausing = { now: 0, most: 0 };
const processors: Processor[] = [];

beforeEach(async () => {
  seen = [];
  pausing = { now: 0, most: 0 };
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const url = request.url ?? '/';
      seen.push({ method: request.method ?? '', url, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      const path = url.split('?')[0]!;
      const json = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (path.startsWith('/items/')) json(200, { id: decodeURIComponent(path.slice('/items/'.length)), name: 'widget', price: 3.5 });
      else if (path === '/echo') json(200, { method: request.method, received: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') });
      else if (path === '/unavailable') json(503, { error: 'down' });
      else if (path === '/busy') json(429, { error: 'slow down' });
      else if (path === '/missing') json(404, { error: 'no such item' });
      else if (path === '/text') {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end('hello, not json');
      } else if (path === '/slow') setTimeout(() => json(200, { late: true }), 2_000).unref();
      else if (path === '/pause') {
        pausing.now++;
        pausing.most = Math.max(pausing.most, pausing.now);
        setTimeout(() => {
          pausing.now--;
          json(200, { paused: true });
        }, 200);
      } else json(500, { error: 'unexpected path' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  for (const created of processors.splice(0)) await created.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const signal = () => new AbortController().signal;

describe('enricher', () => {
  it('fills the URL template with encoded body fields and maps the JSON answer into the target field', async () => {
    const { processor: enricher } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/items/{item.id}?q={name}&n={count}` });
    const input = message({ item: { id: 'a/7 b' }, name: 'ü & co', count: 3 }, { 'x-loom-trace': 't1' });
    const [result] = await enricher.process([input], signal());

    expect(seen[0]!.method).toBe('GET');
    expect(seen[0]!.url).toBe('/items/a%2F7%20b?q=%C3%BC%20%26%20co&n=3');
    expect(seen[0]!.body).toBe('');
    expect(result).toEqual({
      ok: true,
      outputs: [
        {
          id: input.id,
          headers: { 'x-loom-trace': 't1' },
          body: { item: { id: 'a/7 b' }, name: 'ü & co', count: 3, _enrichment: { id: 'a/7 b', name: 'widget', price: 3.5 } },
        },
      ],
    });
  });

  it("passes the message's trace context on to the service it calls, and no other message header", async () => {
    const { processor: enricher } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/items/1` });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await enricher.process([message({}, { traceparent, tracestate: 'loom=1', 'x-loom-tenant': 't1' })], signal());
    expect(seen[0]!.headers).toMatchObject({ traceparent, tracestate: 'loom=1' });
    expect(seen[0]!.headers['x-loom-tenant']).toBeUndefined();
  });

  it('sends the body as JSON for other methods and honours target_field', async () => {
    const { processor: enricher } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/echo`, method: 'POST', target_field: 'details' });
    const [result] = await enricher.process([message({ order: 1, tags: ['x'] })], signal());
    expect(seen[0]!.method).toBe('POST');
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[0]!.body)).toEqual({ order: 1, tags: ['x'] });
    expect(result).toMatchObject({
      ok: true,
      outputs: [{ body: { order: 1, tags: ['x'], details: { method: 'POST', received: { order: 1, tags: ['x'] } } } }],
    });
  });

  it('fails transiently on 503 and 429, naming method, URL without its query string and status', async () => {
    const { processor: enricher } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/{where}?api_key=k-123` });
    const outcomes = await enricher.process([message({ where: 'unavailable' }), message({ where: 'busy' })], signal());
    expect(outcomes).toEqual([
      { ok: false, transient: true, error: `GET ${base}/unavailable answered 503 Service Unavailable` },
      { ok: false, transient: true, error: `GET ${base}/busy answered 429 Too Many Requests` },
    ]);
    // the component itself does not retry: the runtime does
    expect(seen).toHaveLength(2);
  });

  it('fails for good on 404 and on an answer that is not JSON', async () => {
    const { processor: enricher } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/{where}` });
    const outcomes = await enricher.process([message({ where: 'missing' }), message({ where: 'text' })], signal());
    expect(outcomes).toEqual([
      { ok: false, transient: false, error: `GET ${base}/missing answered 404 Not Found` },
      { ok: false, transient: false, error: `GET ${base}/text answered 200 with a body that is not JSON` },
    ]);
  });

  it('fails transiently when the endpoint does not answer within the timeout or cannot be reached', async () => {
    const { processor: enricher } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/slow?x=1`, timeout: 100 });
    // the endpoint answers after 2 s: the outcome is the time-out's, not the answer's
    const [late] = await enricher.process([message({})], signal());
    expect(late).toEqual({ ok: false, transient: true, error: `GET ${base}/slow timed out after 100 ms` });

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const { processor: unreachable } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `http://127.0.0.1:${port}/items/1` });
    const [refused] = await unreachable.process([message({})], signal());
    expect(refused).toEqual({ ok: false, transient: true, error: `GET http://127.0.0.1:${port}/items/1 failed: ECONNREFUSED` });
  });

  it('fails transiently when the run is cancelled mid-call', async () => {
    const { processor: enricher } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/slow` });
    const controller = new AbortController();
    const pending = enricher.process([message({})], controller.signal);
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toEqual([{ ok: false, transient: true, error: `GET ${base}/slow was cancelled` }]);
  });

  it('fails for good, naming the field, when the body lacks a field of the template', async () => {
    const { processor: enricher } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/items/{item.id}` });
    const outcomes = await enricher.process([message({ item: {} }), message({ item: { id: { deep: 1 } } }), message({ item: { id: 5 } })], signal());
    expect(outcomes[0]).toEqual({ ok: false, transient: false, error: "the URL template needs field 'item.id', which the message does not have" });
    expect(outcomes[1]).toEqual({
      ok: false,
      transient: false,
      error: "the URL template needs field 'item.id' to be a string, number or boolean, not an object",
    });
    expect(outcomes[2]).toMatchObject({ ok: true });
    // no call for the messages that could not fill the template
    expect(seen.map((request) => request.url)).toEqual(['/items/5']);
  });

  it('runs the calls of a batch concurrently and answers in order', async () => {
    const { processor: enricher } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/{where}`, target_field: 'answer' });
    const outcomes = await enricher.process(
      [message({ where: 'pause', n: 1 }), message({ where: 'missing', n: 2 }), message({ where: 'pause', n: 3 }), message({ where: 'pause', n: 4 })],
      signal(),
    );
    // the three 200 ms answers were awaited together: the endpoint had all three under way at once
    expect(pausing.most).toBe(3);
    expect(outcomes.map((result) => (result.ok ? result.outputs[0]!.body.n : 'failed'))).toEqual([1, 'failed', 3, 4]);
  });

  it('sends the secret header value to the endpoint and never to the logs', async () => {
    const secret = 'Bearer s3cr3t-token-value';
    const { processor: enricher, raw } = await processor(COMPONENT_KINDS.HTTP_ENRICHER, {
      url: `${base}/{where}`,
      headers: { Authorization: secret, 'X-Api-Key': 'k3y-v4lue' },
    });
    const outcomes = await enricher.process([message({ where: 'items/1' }), message({ where: 'unavailable' }), message({ where: 'text' })], signal());
    expect(seen.map((request) => request.headers.authorization)).toEqual([secret, secret, secret]);
    expect(seen[0]!.headers['x-api-key']).toBe('k3y-v4lue');
    const everything = raw.join('') + JSON.stringify(outcomes);
    expect(everything).not.toContain('s3cr3t');
    expect(everything).not.toContain('k3y-v4lue');
  });

  it('rejects bad options, naming the option and never a header value', async () => {
    await expect(processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: 'not a url' }, 'enricher_2')).rejects.toThrow(
      'enricher_2.options.url: must be an absolute http or https URL',
    );
    await expect(processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/x`, method: 'TRACE' }, 'enricher_2')).rejects.toThrow(
      'enricher_2.options.method: must be one of GET, POST, PUT, PATCH, DELETE',
    );
    const badHeader = processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/x`, headers: { Authorization: 42 } }, 'enricher_2');
    await expect(badHeader).rejects.toBeInstanceOf(ValidationError);
    await expect(badHeader).rejects.toThrow("enricher_2.options.headers: header 'Authorization' must have a string value");
    const brokenValue = processor(COMPONENT_KINDS.HTTP_ENRICHER, { url: `${base}/x`, headers: { Authorization: 'sec\nret' } }, 'enricher_2');
    await expect(brokenValue).rejects.toThrow("enricher_2.options.headers: the value of header 'Authorization' must not hold line breaks");
    await expect(brokenValue).rejects.not.toThrow('sec');
  });
});

describe('logger sink', () => {
  it('logs each message at its level and emits nothing', async () => {
    const { processor: sink, lines } = await processor(COMPONENT_KINDS.LOGGER, { level: 'warn' }, 'logger_1');
    const first = message({ order: 1 });
    const second = message({ order: 2, nested: { a: [1] } });
    const outcomes = await sink.process([first, second], signal());
    expect(outcomes).toEqual([
      { ok: true, outputs: [] },
      { ok: true, outputs: [] },
    ]);
    expect(lines.map(({ level, component, messageId, body }) => ({ level, component, messageId, body }))).toEqual([
      { level: 'warn', component: 'logger_1', messageId: first.id, body: { order: 1 } },
      { level: 'warn', component: 'logger_1', messageId: second.id, body: { order: 2, nested: { a: [1] } } },
    ]);
  });

  it('defaults to info and rejects an unknown level', async () => {
    const { processor: sink, lines } = await processor(COMPONENT_KINDS.LOGGER, {});
    await sink.process([message({ n: 1 })], signal());
    expect(lines.map((line) => line.level)).toEqual(['info']);
    await expect(processor(COMPONENT_KINDS.LOGGER, { level: 'loud' }, 'logger_2')).rejects.toThrow(
      'logger_2.options.level: must be one of debug, info, warn, error',
    );
  });
});
