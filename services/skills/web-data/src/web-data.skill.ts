import { AddressPolicy, type FetchedDocument, safeFetch, type SkillModule, UnprocessableError } from '@loom/skill-service-kit';
import { extractArticle, type WebData } from './article.js';
import { decodeHtml } from './decode.js';

/** Media types of pages the skill reads. */
const HTML_TYPES = ['text/html', 'application/xhtml+xml'];

const REQUEST_SCHEMA = {
  type: 'object',
  required: ['url'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', minLength: 1, maxLength: 8192, description: 'http or https URL of the page' },
    html: { type: 'string', description: 'the page itself, when the caller already has it: nothing is fetched and `url` only resolves relative links' },
  },
};

const RESPONSE_SCHEMA = {
  type: 'object',
  required: ['data'],
  properties: {
    data: {
      type: 'object',
      required: ['top_image', 'movies', 'text', 'keywords', 'authors', 'publish_date'],
      properties: {
        top_image: { type: 'string', description: 'URL of the main image, or empty' },
        movies: { type: 'array', items: { type: 'string' }, description: 'URLs of embedded video players' },
        text: { type: 'string', description: 'the article text, paragraphs separated by blank lines' },
        keywords: { type: 'array', items: { type: 'string' }, description: 'the most frequent non-stopword terms' },
        authors: { type: 'array', items: { type: 'string' } },
        publish_date: { type: 'string', nullable: true, description: 'ISO 8601 date-time without offset (UTC when the page gave an offset), or null' },
        title: { type: 'string' },
      },
    },
  },
};

/** The web data extraction skill: `POST /extract {url}` → `{data: {top_image, movies, text, keywords, authors, publish_date}}`. */
export const webDataSkill: SkillModule = {
  name: 'web-data',
  defaultPort: 8000,
  hostPort: 8087,
  registrationPath: '/extract',
  capability: 'WEB_DATA_EXTRACTION',
  create({ settings }) {
    const policy = new AddressPolicy(settings.fetchAllowHosts);
    return Promise.resolve({
      name: 'web-data',
      title: 'loom web data extraction',
      description:
        'Fetches a page (refusing loopback, private, link-local and metadata addresses unless allow-listed) and extracts its article text with Readability and its metadata with newspaper-style rules.',
      version: '0.1.0',
      routes: [
        {
          method: 'POST',
          path: '/extract',
          summary: 'Extract article text and metadata from a page',
          body: REQUEST_SCHEMA,
          response: RESPONSE_SCHEMA,
          errors: [422],
          async handler(request) {
            const body = request.body as { url: string; html?: string };
            let html: string;
            let pageUrl = body.url;
            if (body.html === undefined) {
              const page: FetchedDocument = await safeFetch(body.url, {
                policy,
                limits: settings.fetchLimits,
                accept: HTML_TYPES,
                field: 'url',
                signal: request.signal,
              });
              html = decodeHtml(page.body, page.charset);
              pageUrl = page.url;
              request.span.setAttribute('loom.webdata.page_bytes', page.body.length);
            } else {
              html = body.html;
            }
            return { data: extract(html, pageUrl) };
          },
        },
      ],
      health: () => ({ fetchAllowHosts: settings.fetchAllowHosts.length }),
    });
  },
};

function extract(html: string, url: string): WebData {
  try {
    return extractArticle(html, url);
  } catch (error) {
    throw new UnprocessableError('unreadable_page', `the page could not be parsed: ${error instanceof Error ? error.message : String(error)}`, {
      field: 'url',
      cause: error,
    });
  }
}
