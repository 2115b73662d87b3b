import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type SkillServer } from '@loom/skill-service-kit';
import { postJson, startSkillForTest } from '@loom/skill-service-kit/testing';
import { parseDate, webDataSkill, type WebData } from '../src/index.js';

const page = (name: string): Buffer => readFileSync(new URL(`./pages/${name}`, import.meta.url));

/** Bag-of-words F1 between extracted and expected text, as article-extraction benchmarks score it. */
function wordF1(actual: string, expected: string): number {
  const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const counts = new Map<string, number>();
  for (const word of words(expected)) counts.set(word, (counts.get(word) ?? 0) + 1);
  const actualWords = words(actual);
  let overlap = 0;
  for (const word of actualWords) {
    const left = counts.get(word) ?? 0;
    if (left > 0) {
      overlap += 1;
      counts.set(word, left - 1);
    }
  }
  const precision = overlap / actualWords.length;
  const recall = overlap / words(expected).length;
  return (2 * precision * recall) / (precision + recall);
}

let site: Server;
let siteUrl: string;
const servers: SkillServer[] = [];

beforeAll(async () => {
  site = createServer((request, response) => {
    const routes: Record<string, [string, Buffer]> = {
      '/news/2025/elbe-cleanup': ['text/html; charset=utf-8', page('river-cleanup.html')],
      '/solar-roofs': ['text/html', page('solar-roofs.html')],
      '/2023/03/12/chess-final.html': ['text/html', page('chess-final.html')],
      '/moved': ['text/html', Buffer.from('')],
      '/data.json': ['application/json', Buffer.from('{}')],
    };
    if (request.url === '/moved') {
      response.writeHead(301, { location: '/solar-roofs' }).end();
      return;
    }
    const route = routes[request.url ?? ''];
    if (route === undefined) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': route[0] }).end(route[1]);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  return () => new Promise<void>((resolve) => site.close(() => resolve()));
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function skill(allow: string[] = ['127.0.0.1']): Promise<SkillServer> {
  const server = await startSkillForTest(webDataSkill, { fetchAllowHosts: allow });
  servers.push(server);
  return server;
}

async function extract(server: SkillServer, url: string): Promise<WebData> {
  const answer = await postJson(server, '/extract', { url });
  expect(answer.status).toBe(200);
  return (answer.body as { data: WebData }).data;
}

describe('web data skill', () => {
  it('extracts a news article: text, author, zoned date in UTC, og:image, video, keywords', async () => {
    const server = await skill();
    const data = await extract(server, `${siteUrl}/news/2025/elbe-cleanup`);
    expect(wordF1(data.text, page('river-cleanup.txt').toString())).toBeGreaterThanOrEqual(0.95);
    expect(data.text).not.toContain('Advertisement');
    expect(data.text).not.toContain('Related stories');
    expect(data.text.split('\n\n').length).toBeGreaterThanOrEqual(5);
    expect(data.authors).toEqual(['Mara Lindqvist']);
    expect(data.publish_date).toBe('2025-06-14T07:30:00');
    expect(data.top_image).toBe(`${siteUrl}/media/elbe-cleanup-wide.jpg`);
    expect(data.movies).toEqual(['https://www.youtube.com/embed/xElbe2025']);
    expect(data.keywords).toEqual(expect.arrayContaining(['plastic', 'volunteers', 'cleanup']));
    expect(data.keywords.length).toBeLessThanOrEqual(10);
    expect(data.title).toBe('Volunteers pull two tonnes of plastic from the Elbe');
  });

  it('reads JSON-LD authors and date, and follows a redirect', async () => {
    const server = await skill();
    const data = await extract(server, `${siteUrl}/moved`);
    expect(wordF1(data.text, page('solar-roofs.txt').toString())).toBeGreaterThanOrEqual(0.95);
    expect(data.authors).toEqual(['Priya Natarajan', 'Tom Becker']);
    expect(data.publish_date).toBe('2024-11-03T07:15:00');
    expect(data.keywords).toEqual(expect.arrayContaining(['subsidy', 'homeowners']));
    expect(data.movies).toEqual([]);
  });

  it('decodes a Latin-1 page, dates it from its URL and finds a <video>', async () => {
    const server = await skill();
    const data = await extract(server, `${siteUrl}/2023/03/12/chess-final.html`);
    expect(wordF1(data.text, page('chess-final.txt').toString())).toBeGreaterThanOrEqual(0.95);
    expect(data.text).toContain('Léa Fournier');
    expect(data.publish_date).toBe('2023-03-12T00:00:00');
    expect(data.movies).toEqual([`${siteUrl}/media/final-moves.mp4`]);
    expect(data.authors).toEqual([]);
    expect(data.top_image).toBe('');
  });

  it('takes the page in the request when given, fetching nothing', async () => {
    const server = await skill([]);
    expect((await postJson(server, '/extract', { url: 'http://10.0.0.1/solar-roofs' })).status).toBe(422);
    const answer = await postJson(server, '/extract', { url: 'http://10.0.0.1/2024/01/02/x', html: page('solar-roofs.html').toString() });
    expect((answer.body as { data: WebData }).data.authors).toEqual(['Priya Natarajan', 'Tom Becker']);
  });

  it.each([
    'http://127.0.0.1:9/',
    'http://10.1.2.3/',
    'http://172.16.0.1/',
    'http://192.168.0.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/',
    'http://localhost/',
  ])('refuses %s without the allow-list', async (url) => {
    const server = await skill([]);
    const answer = await postJson(server, '/extract', { url });
    expect(answer.status).toBe(422);
    expect(answer.body).toMatchObject({ error: 'address_refused', field: 'url' });
  });

  it('answers 400 naming the field, 422 for a non-HTML page, 415 for a non-JSON body', async () => {
    const server = await skill();
    expect(await postJson(server, '/extract', {})).toMatchObject({ status: 400, body: { field: 'url' } });
    expect(await postJson(server, '/extract', { url: 42 })).toMatchObject({ status: 400, body: { field: 'url' } });
    expect(await postJson(server, '/extract', { url: `${siteUrl}/data.json` })).toMatchObject({
      status: 422,
      body: { error: 'unsupported_content_type', field: 'url' },
    });
    expect(await postJson(server, '/extract', { url: `${siteUrl}/gone` })).toMatchObject({ status: 422, body: { error: 'fetch_failed' } });
    const text = await fetch(`${server.url}/extract`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: siteUrl });
    expect(text.status).toBe(415);
  });

  it('serves 32 concurrent requests', async () => {
    const server = await skill();
    const urls = ['/news/2025/elbe-cleanup', '/solar-roofs', '/2023/03/12/chess-final.html'];
    const answers = await Promise.all(Array.from({ length: 32 }, (_, i) => postJson(server, '/extract', { url: `${siteUrl}${urls[i % 3]}` })));
    expect(answers.map((answer) => answer.status)).toEqual(Array(32).fill(200));
    expect(new Set(answers.map((answer) => (answer.body as { data: WebData }).data.title)).size).toBe(3);
  });
});

describe('parseDate', () => {
  it('converts zoned date-times to UTC, keeps unzoned wall-clock time, refuses what it cannot place', () => {
    expect(parseDate('2025-06-14T09:30:00+02:00')).toBe('2025-06-14T07:30:00');
    expect(parseDate('2025-06-14 09:30')).toBe('2025-06-14T09:30:00');
    expect(parseDate('2025-06-14')).toBe('2025-06-14T00:00:00');
    expect(parseDate('Tue, 10 Mar 2026 10:00:00 GMT')).toBe('2026-03-10T10:00:00');
    expect(parseDate('last Tuesday')).toBeNull();
    expect(parseDate('0001-01-01')).toBeNull();
  });
});
