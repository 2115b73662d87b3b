import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpPost, skillPool } from './http-post.js';

/** A skill on loopback: what it received, and an answer of its choosing. */
async function startSkill(answer: (request: IncomingMessage, body: Buffer, response: ServerResponse) => void): Promise<{ server: Server; origin: string }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => answer(request, Buffer.concat(chunks), response));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('httpPost', () => {
  const closing: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  it('sends the body and answers the skill’s bytes unchanged, in several chunks, with its headers by lower-case name', async () => {
    // every byte value, and more than one socket read's worth: the answer arrives in several chunks
    const sent = Buffer.from(Array.from({ length: 300_000 }, (_, index) => (index * 7) % 256));
    const seen: { method?: string; url?: string; body?: Buffer; type?: string; length?: string } = {};
    const { server, origin } = await startSkill((request, body, response) => {
      Object.assign(seen, { method: request.method, url: request.url, body, type: request.headers['content-type'], length: request.headers['content-length'] });
      response.setHeader('Content-Type', 'application/octet-stream');
      response.setHeader('Retry-After', '3');
      response.end(Buffer.from(body).reverse());
    });
    closing.push(() => new Promise((resolve) => server.close(resolve)));
    const pool = skillPool(origin, 2);
    closing.push(() => pool.destroy());

    const answer = await httpPost({
      url: new URL(`${origin}/v2/annotate?x=1`),
      headers: { 'content-type': 'application/json' },
      body: sent,
      pool,
      signal: AbortSignal.timeout(10_000),
    });

    expect(seen).toMatchObject({ method: 'POST', url: '/v2/annotate?x=1', type: 'application/json', length: String(sent.byteLength) });
    expect(seen.body?.equals(sent)).toBe(true);
    expect(answer.status).toBe(200);
    expect(answer.headers).toMatchObject({ 'content-type': 'application/octet-stream', 'retry-after': '3' });
    expect(answer.body.equals(Buffer.from(sent).reverse())).toBe(true);
  });

  it('rejects with the signal’s reason once it aborts, and closes that connection', async () => {
    const { server, origin } = await startSkill(() => undefined); // never answers
    const closed = new Promise<void>((resolve) => server.on('connection', (socket) => socket.on('close', () => resolve())));
    closing.push(() => new Promise((resolve) => server.close(resolve)));
    const pool = skillPool(origin, 1);
    closing.push(() => pool.destroy());
    const controller = new AbortController();

    const posted = httpPost({ url: new URL(`${origin}/annotate`), headers: {}, body: Buffer.from('{}'), pool, signal: controller.signal });
    controller.abort(new Error('given up'));

    await expect(posted).rejects.toThrow('given up');
    await closed;
  });

  it('rejects with the socket’s error code when nothing listens', async () => {
    const { server, origin } = await startSkill(() => undefined);
    await new Promise((resolve) => server.close(resolve));
    const pool = skillPool(origin, 1);
    closing.push(() => pool.destroy());

    await expect(
      httpPost({ url: new URL(`${origin}/annotate`), headers: {}, body: Buffer.from('{}'), pool, signal: AbortSignal.timeout(10_000) }),
    ).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
  });
});
