import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type SkillServer } from '@loom/skill-service-kit';
import { postJson, startSkillForTest } from '@loom/skill-service-kit/testing';
import { createPdfSkill, pdfDate, pdfSkill } from '../src/index.js';
import { makePdf } from '../src/testing.js';

const servers: SkillServer[] = [];
const sites: Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
  await Promise.all(sites.splice(0).map((site) => new Promise((resolve) => site.close(resolve))));
});

async function skill(module = pdfSkill, changes: Parameters<typeof startSkillForTest>[1] = {}): Promise<SkillServer> {
  const server = await startSkillForTest(module, changes);
  servers.push(server);
  return server;
}

interface PdfAnswer {
  text: string;
  pages: Array<{ number: number; text: string }>;
  metadata: Record<string, unknown>;
  error?: string;
}

async function postPdf(server: SkillServer, bytes: Buffer, type = 'application/pdf'): Promise<{ status: number; body: PdfAnswer }> {
  const response = await fetch(`${server.url}/parse`, { method: 'POST', headers: { 'content-type': type }, body: bytes });
  return { status: response.status, body: (await response.json()) as PdfAnswer };
}

describe('PDF skill', () => {
  it('reads one page: text, pages and metadata', async () => {
    const server = await skill();
    const answer = await postPdf(
      server,
      makePdf({ pages: [['Knowledge graphs connect facts.', 'Second line here.']], title: 'Graphs', author: 'Ada Lovelace' }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.text).toBe('Knowledge graphs connect facts.\nSecond line here.');
    expect(answer.body.pages).toEqual([{ number: 1, text: 'Knowledge graphs connect facts.\nSecond line here.' }]);
    expect(answer.body.metadata).toMatchObject({
      title: 'Graphs',
      author: 'Ada Lovelace',
      producer: 'loom tests',
      creationDate: '2025-01-02T03:04:05Z',
      pdfVersion: '1.4',
      pageCount: 1,
    });
  });

  it('reads several pages in order, and takes application/octet-stream', async () => {
    const server = await skill();
    const pages = [['Page one (intro)'], ['Page two'], ['Page three', 'ends here']];
    const answer = await postPdf(server, makePdf({ pages }), 'application/octet-stream');
    expect(answer.status).toBe(200);
    expect(answer.body.pages.map((page) => page.number)).toEqual([1, 2, 3]);
    expect(answer.body.pages[0]!.text).toBe('Page one (intro)');
    expect(answer.body.text).toBe('Page one (intro)\n\nPage two\n\nPage three\nends here');
  });

  it('fetches a PDF by URL under the address rules', async () => {
    const site = createServer((_request, response) =>
      response.writeHead(200, { 'content-type': 'application/pdf' }).end(makePdf({ pages: [['Fetched text']] })),
    );
    sites.push(site);
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/doc.pdf`;
    const allowed = await skill(pdfSkill, { fetchAllowHosts: ['127.0.0.1'] });
    expect(await postJson(allowed, '/parse', { url })).toMatchObject({ status: 200, body: { text: 'Fetched text' } });
    const strict = await skill();
    expect(await postJson(strict, '/parse', { url })).toMatchObject({ status: 422, body: { error: 'address_refused', field: 'url' } });
    expect(await postJson(strict, '/parse', { link: url })).toMatchObject({ status: 400, body: { field: 'url' } });
  });

  it('refuses non-PDF bytes (422), another media type (415), an encrypted PDF and a malformed one (422)', async () => {
    const server = await skill();
    expect(await postPdf(server, Buffer.from('just some text, not a PDF'))).toMatchObject({ status: 422, body: { error: 'not_a_pdf' } });
    const text = await fetch(`${server.url}/parse`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(text.status).toBe(415);
    const encrypted = await postPdf(server, makePdf({ pages: [['Secret']], encrypted: true }));
    expect(encrypted).toMatchObject({ status: 422, body: { error: 'pdf_encrypted', message: 'the PDF is encrypted and needs a password' } });
    const malformed = await postPdf(server, Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage'));
    expect(malformed).toMatchObject({ status: 422, body: { error: 'pdf_malformed' } });
  });

  it('refuses a body over the limit (413) and more pages than allowed (413)', async () => {
    const small = await skill(pdfSkill, { limits: { bodyLimitBytes: 2048, concurrency: 4, timeLimitMs: 10_000, retryAfterSeconds: 1 } });
    const big = makePdf({ pages: Array.from({ length: 20 }, (_, i) => [`Page ${i} with some words to make it longer than two kilobytes`]) });
    expect((await postPdf(small, big)).status).toBe(413);
    const paged = await skill(createPdfSkill({ maxPages: 2 }));
    expect(await postPdf(paged, makePdf({ pages: [['a'], ['b'], ['c']] }))).toMatchObject({ status: 413, body: { error: 'payload_too_large' } });
  });

  it('cuts off PDF bombs (a huge page count, deep nesting) and stays healthy', async () => {
    const server = await skill(pdfSkill, { limits: { bodyLimitBytes: 16 * 1024 * 1024, concurrency: 4, timeLimitMs: 20_000, retryAfterSeconds: 1 } });
    // one page object listed 50,000 times: tiny file, huge page count
    const pages = await postPdf(server, makePdf({ pages: [['one']], repeatKids: 50_000 }));
    // refused by the page limit, or by the parse time limit on a slow machine: cut off either way
    expect([413, 422]).toContain(pages.status);
    const depth = 200_000;
    const nested = makePdf({ pages: [['x']], extraInfo: `/Deep ${'['.repeat(depth)}${']'.repeat(depth)}` });
    const deep = await postPdf(server, nested);
    expect([200, 413, 422]).toContain(deep.status);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    expect(await postPdf(server, makePdf({ pages: [['still fine']] }))).toMatchObject({ status: 200, body: { text: 'still fine' } });
  });

  it('serves 32 concurrent requests', async () => {
    const server = await skill();
    const answers = await Promise.all(Array.from({ length: 32 }, (_, i) => postPdf(server, makePdf({ pages: [[`Document ${i}`]] }))));
    expect(answers.map((answer) => answer.status)).toEqual(Array(32).fill(200));
    expect(answers.map((answer) => answer.body.text)).toEqual(Array.from({ length: 32 }, (_, i) => `Document ${i}`));
  });
});

describe('pdfDate', () => {
  it('reads PDF dates with and without zone', () => {
    expect(pdfDate("D:20250102030405+01'00'")).toBe('2025-01-02T02:04:05Z');
    expect(pdfDate('D:2025')).toBe('2025-01-01T00:00:00Z');
    expect(pdfDate('yesterday')).toBeNull();
    expect(pdfDate(undefined)).toBeNull();
  });
});

describe('PdfWorkerPool', () => {
  it('ends a parse over its time limit with its worker, and parses the next document with a new one', async () => {
    const { PdfWorkerPool, PdfParseError } = await import('../src/index.js');
    const slow = new PdfWorkerPool(1, { maxPages: 10_000, parseTimeMs: 1, workerMemoryMb: 256 });
    const big = makePdf({ pages: Array.from({ length: 400 }, (_, i) => [`page ${i}`]) });
    const error = await slow.parse(big, new AbortController().signal).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PdfParseError);
    expect((error as InstanceType<typeof PdfParseError>).kind).toBe('too_complex');
    expect(slow.workers).toBe(0);
    await slow.close();
    const pool = new PdfWorkerPool(1, { maxPages: 10, parseTimeMs: 10_000, workerMemoryMb: 256 });
    expect((await pool.parse(makePdf({ pages: [['again']] }), new AbortController().signal)).pages).toEqual([{ number: 1, text: 'again' }]);
    await pool.close();
    await pool.close();
  });
});
