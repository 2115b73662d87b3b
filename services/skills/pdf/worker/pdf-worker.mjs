// Parses one PDF at a time with pdf.js (unpdf's build), off the service's event loop: the pool (WorkerPool of
// @loom/foundation) ends this thread when a document takes too long or too much memory, and the service stays healthy.
import { serveWorkerJobs } from '@loom/foundation/worker';
import { getDocumentProxy } from 'unpdf';

/** More pages than the skill reads. */
class TooManyPagesError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TooManyPagesError';
  }
}

serveWorkerJobs(async (job) => {
  let pdf;
  try {
    pdf = await getDocumentProxy(new Uint8Array(job.bytes), {
      isEvalSupported: false,
      disableFontFace: true,
      useSystemFonts: false,
      verbosity: 0,
    });
    if (pdf.numPages > job.maxPages) throw new TooManyPagesError(`the PDF has ${pdf.numPages} pages; at most ${job.maxPages} are read`);
    const pages = [];
    for (let number = 1; number <= pdf.numPages; number += 1) {
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items) {
        if (typeof item.str !== 'string') continue;
        text += item.str;
        if (item.hasEOL) text += '\n';
      }
      pages.push({ number, text: text.replace(/[ \t]+\n/g, '\n').trim() });
      page.cleanup();
    }
    const { info } = await pdf.getMetadata();
    return { pages, info: plain(info) };
  } finally {
    await pdf?.destroy();
  }
});

/** Keeps only the JSON-safe fields of the document information dictionary. */
function plain(info) {
  const out = {};
  for (const [key, value] of Object.entries(info ?? {})) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[key] = value;
  }
  return out;
}
