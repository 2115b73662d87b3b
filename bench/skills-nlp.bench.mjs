// Throughput of loom's skill services, each on 127.0.0.1:0 in this process, called over HTTP as a workflow would:
//  - web data: pages/s on the article pages of its tests, served from a loopback site (allow-listed), at concurrency
//    1 and 4; baseline: the same extraction (Readability over linkedom + metadata rules) called in-process, no HTTP,
//    no fetch — the ratio is what the service, the safe fetch and the JSON cost;
//  - PDF: pages/s on a generated 40-page document at concurrency 1 and 4; baseline: unpdf's getDocumentProxy +
//    getTextContent in-process on the same bytes;
//  - annotation: documents/s and tokens/s at concurrency 1 and 4 on the NASA TextRank lesson (the default pipeline),
//    the skill on its worker threads (one per core); baseline: NlpPipeline.annotate() in this process.
// Each figure is the median of ROUNDS timed rounds after a warm-up round; nothing passes or fails.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getDocumentProxy } from 'unpdf';
import { NlpPipeline } from '@loom/nlp';
import { testDataDir } from '@loom/nlp-training';
import { startSkillForTest } from '@loom/skill-service-kit/testing';
import { pdfSkill } from '@loom/skill-pdf';
import { makePdf } from '@loom/skill-pdf/testing';
import { extractArticle, webDataSkill } from '@loom/skill-web-data';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WEB_REQUESTS = Number(process.env.BENCH_WEB_REQUESTS ?? 120);
const PDF_REQUESTS = Number(process.env.BENCH_PDF_REQUESTS ?? 12);
const PDF_PAGES = 40;
const here = dirname(fileURLToPath(import.meta.url));
const pagesDir = join(here, '..', 'services', 'skills', 'web-data', 'test', 'pages');
const pages = ['river-cleanup.html', 'solar-roofs.html', 'chess-final.html'].map((name) => ({ name, html: readFileSync(join(pagesDir, name)) }));

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const fmt = (value) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));

/** Runs `count` calls of `call(i)` with at most `concurrency` at once; resolves with the seconds taken. */
async function timed(count, concurrency, call) {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = next++;
        await call(index);
      }
    }),
  );
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** Median rate over ROUNDS rounds after one warm-up round. */
async function rate(count, concurrency, call, unitsPerCall = 1) {
  await timed(Math.min(count, 8), concurrency, call);
  const rates = [];
  for (let round = 0; round < ROUNDS; round += 1) rates.push((count * unitsPerCall) / (await timed(count, concurrency, call)));
  return median(rates);
}

async function post(url, body, type = 'application/json') {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': type }, body: type === 'application/json' ? JSON.stringify(body) : body });
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

// --- web data
const site = createServer((request, response) => {
  const page = pages.find((candidate) => request.url === `/${candidate.name}`);
  if (page === undefined) return void response.writeHead(404).end();
  response.writeHead(200, { 'content-type': page.name.startsWith('chess') ? 'text/html; charset=iso-8859-1' : 'text/html; charset=utf-8' }).end(page.html);
});
await new Promise((resolve) => site.listen(0, '127.0.0.1', resolve));
const siteUrl = `http://127.0.0.1:${site.address().port}`;
const web = await startSkillForTest(webDataSkill, { fetchAllowHosts: ['127.0.0.1'] });
const inProcess = pages.map((page) => ({
  url: `${siteUrl}/${page.name}`,
  html: new TextDecoder(page.name.startsWith('chess') ? 'latin1' : 'utf-8').decode(page.html),
}));
const webBaseline = await rate(WEB_REQUESTS, 1, (i) => extractArticle(inProcess[i % 3].html, inProcess[i % 3].url));
console.log(`web data: baseline (in-process extraction, no HTTP) ${fmt(webBaseline)} pages/s`);
for (const concurrency of [1, 4]) {
  const pagesPerSecond = await rate(WEB_REQUESTS, concurrency, (i) => post(`${web.url}/extract`, { url: `${siteUrl}/${pages[i % 3].name}` }));
  console.log(
    `web data: service at concurrency ${concurrency}: ${fmt(pagesPerSecond)} pages/s (${(pagesPerSecond / webBaseline).toFixed(2)}x the in-process baseline)`,
  );
}
await web.stop();
site.close();

// --- PDF
const pdfBytes = makePdf({
  pages: Array.from({ length: PDF_PAGES }, (_, page) =>
    Array.from({ length: 30 }, (_, line) => `Page ${page + 1} line ${line + 1}: knowledge graphs connect entities and facts.`),
  ),
});
const pdfBaseline = await rate(
  PDF_REQUESTS,
  1,
  async () => {
    const document = await getDocumentProxy(new Uint8Array(pdfBytes), { isEvalSupported: false, verbosity: 0 });
    for (let number = 1; number <= document.numPages; number += 1) await (await document.getPage(number)).getTextContent();
    await document.destroy();
  },
  PDF_PAGES,
);
console.log(`PDF: baseline (pdf.js in-process, same document) ${fmt(pdfBaseline)} pages/s`);
const pdf = await startSkillForTest(pdfSkill);
for (const concurrency of [1, 4]) {
  const pagesPerSecond = await rate(PDF_REQUESTS, concurrency, () => post(`${pdf.url}/parse`, pdfBytes, 'application/pdf'), PDF_PAGES);
  console.log(
    `PDF: service at concurrency ${concurrency}: ${fmt(pagesPerSecond)} pages/s (${(pagesPerSecond / pdfBaseline).toFixed(2)}x the in-process baseline)`,
  );
}
await pdf.stop();

// --- annotation
{
  const { annotationSkill } = await import('@loom/skill-annotation');
  const text = readFileSync(join(testDataDir(), 'textrank', 'nasa-lesson-164448.txt'), 'utf8');
  const pipeline = new NlpPipeline();
  const annotate = (text, options = {}) => pipeline.annotate(text, { annotators: options.annotators });
  const inProcess = annotate(text);
  const tokens = inProcess.sentences.reduce((sum, sentence) => sum + sentence.tokens.length, 0);
  const baseline = await rate(40, 1, () => Promise.resolve(annotate(text)));
  console.log(`annotation: baseline (libs/nlp NlpPipeline.annotate() in-process) ${fmt(baseline)} documents/s, ${fmt(baseline * tokens)} tokens/s`);
  // the skill as deployed: loom's models on its worker threads (SKILL_WORKERS, one per core)
  const annotation = await startSkillForTest(annotationSkill);
  for (const concurrency of [1, 4]) {
    const documents = await rate(40, concurrency, () => post(`${annotation.url}/v2/annotate`, { text }));
    console.log(
      `annotation: concurrency ${concurrency}: ${fmt(documents)} documents/s, ${fmt(documents * tokens)} tokens/s (NASA lesson, ${tokens} tokens; ${(documents / baseline).toFixed(2)}x the in-process baseline)`,
    );
  }
  await annotation.stop();
}
