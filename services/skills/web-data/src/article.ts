import { Readability } from '@mozilla/readability';
import { parseHTML as parseWithLinkedom } from 'linkedom';
import { type DomDocument, type DomElement, type DomNode } from './dom.js';
import { bylineNames, extractAuthors, extractMovies, extractPublishDate, extractTopImage } from './article-metadata.js';
import { ENGLISH_STOPWORDS } from './stopwords.js';

/** What the web data skill answers under `data`. */
export interface WebData {
  readonly top_image: string;
  readonly movies: string[];
  readonly text: string;
  readonly keywords: string[];
  readonly authors: string[];
  /** ISO 8601 without offset, or null when the page states none. */
  readonly publish_date: string | null;
  /** The article's title (beyond the specification's fields). */
  readonly title: string;
}

const KEYWORD_COUNT = 10;

const BLOCK_TAGS = new Set([
  'ADDRESS',
  'ARTICLE',
  'ASIDE',
  'BLOCKQUOTE',
  'DD',
  'DIV',
  'DL',
  'DT',
  'FIGCAPTION',
  'FIGURE',
  'FOOTER',
  'FORM',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'HEADER',
  'HR',
  'LI',
  'MAIN',
  'NAV',
  'OL',
  'P',
  'PRE',
  'SECTION',
  'TABLE',
  'TBODY',
  'TD',
  'TH',
  'THEAD',
  'TR',
  'UL',
]);

/** linkedom's parser, typed by what the rules use (its own declarations need the DOM library). */
const parseHTML = parseWithLinkedom as unknown as (html: string) => { document: DomDocument };

/** Extracts article text (Readability over linkedom) and newspaper-style metadata from a page. */
export function extractArticle(html: string, url: string): WebData {
  const document = parseHTML(html).document;
  // relative links and images resolve against the page, unless the page sets its own base
  if (document.querySelector('base[href]') === null) {
    const base = document.createElement('base');
    base.setAttribute('href', url);
    (document.head ?? document.documentElement).prepend(base);
  }
  const baseUrl = document.querySelector('base[href]')?.getAttribute('href') ?? url;
  const absoluteBase = safeUrl(baseUrl, url);
  // metadata first: Readability rewrites the document it reads
  const publishDate = extractPublishDate(document, url);
  const pageAuthors = extractAuthors(document, undefined);
  const metaTopImage = extractTopImage(document, document.querySelector('head'), absoluteBase);
  const ogVideos = extractMovies(document, document.querySelector('head'), absoluteBase);

  // Readability declares the DOM library's Document (unresolved here, so unchecked); linkedom's document is one at run time
  const parsed = new Readability(document, { keepClasses: false }).parse();
  const { document: content } = parseHTML(`<!doctype html><html><body>${parsed?.content ?? ''}</body></html>`);
  const root = content.body;

  const title = cleanTitle(parsed?.title ?? document.title ?? '');
  const authors = unique([...pageAuthors, ...(parsed?.byline === null || parsed?.byline === undefined ? [] : bylineNames(parsed.byline))]);
  const text = articleText(root, title, authors);
  const topImage = metaTopImage !== '' ? metaTopImage : extractTopImage(content, root, absoluteBase);
  const movies = unique([...ogVideos, ...extractMovies(content, root, absoluteBase)]);
  return { top_image: topImage, movies, text, keywords: frequentTerms(`${title} ${text}`), authors, publish_date: publishDate, title };
}

/** The article's text: one paragraph per block, blank lines between; a heading repeating the title and byline lines dropped. */
export function articleText(root: DomElement | null, title: string, authors: readonly string[]): string {
  const paragraphs: string[] = [];
  let current = '';
  const flush = (): void => {
    const text = current
      .replace(/[ \t\f\v\u00a0]+/g, ' ')
      .replace(/ *\n */g, '\n')
      .trim();
    if (text !== '') paragraphs.push(text);
    current = '';
  };
  const walk = (node: DomNode): void => {
    if (node.nodeType === 3) {
      current += (node.textContent ?? '').replace(/\s+/g, ' ');
      return;
    }
    if (node.nodeType !== 1) return;
    const element = node as DomElement;
    if (element.tagName === 'BR') {
      current += '\n';
      return;
    }
    if (element.tagName === 'SCRIPT' || element.tagName === 'STYLE' || element.tagName === 'NOSCRIPT') return;
    const block = BLOCK_TAGS.has(element.tagName);
    if (block) flush();
    for (const child of element.childNodes) walk(child);
    if (block) flush();
  };
  if (root !== null) walk(root);
  flush();
  const normalizedTitle = normalize(title);
  const authorKeys = authors.map(normalize);
  return paragraphs
    .filter((paragraph, index) => !(index < 3 && normalize(paragraph) === normalizedTitle))
    .filter((paragraph, index) => !(index < 4 && isBylineLine(paragraph, authorKeys)))
    .join('\n\n');
}

function isBylineLine(paragraph: string, authorKeys: readonly string[]): boolean {
  if (paragraph.length > 100) return false;
  if (/^(written\s+)?by\s+\p{Lu}/iu.test(paragraph)) return true;
  const key = normalize(paragraph);
  return authorKeys.length > 0 && authorKeys.some((author) => key === author);
}

/** The most frequent non-stopword terms, most frequent first, ties in order of appearance. */
export function frequentTerms(text: string, count = KEYWORD_COUNT): string[] {
  const counts = new Map<string, number>();
  for (const match of text.toLowerCase().matchAll(/\p{L}[\p{L}\p{M}'’-]*\p{L}|\p{L}/gu)) {
    const word = match[0].replace(/['’]s$/, '');
    if (word.length < 3 || ENGLISH_STOPWORDS.has(word)) continue;
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([word]) => word);
}

/** `Moon base opens | The Daily News` → `Moon base opens`, when the site name is the shorter part. */
function cleanTitle(title: string): string {
  const trimmed = title.replace(/\s+/g, ' ').trim();
  const parts = trimmed.split(/\s+[|\-–—»:]\s+/);
  if (parts.length < 2) return trimmed;
  const longest = parts.reduce((best, part) => (part.length > best.length ? part : best), '');
  return longest.split(' ').length >= 3 ? longest : trimmed;
}

function normalize(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

function unique(values: readonly string[]): string[] {
  const seen = new Set<string>();
  return values.filter((value) => {
    const key = value.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function safeUrl(url: string, base: string): string {
  try {
    return new URL(url, base).href;
  } catch {
    return base;
  }
}
