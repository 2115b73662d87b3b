import { type DomDocument, type DomScope } from './dom.js';

/** Rules, in the manner of newspaper3k, for an article's authors, publish date, top image and videos. */

const AUTHOR_MARKERS = ['author', 'byline', 'dc.creator', 'byl', 'article:author', 'parsely-author', 'sailthru.author'];

/** Meta tags holding a publish date, most trusted first (newspaper3k's list, plus JSON-LD and <time> after). */
const DATE_META: ReadonlyArray<readonly [attribute: string, value: string]> = [
  ['property', 'article:published_time'],
  ['property', 'rnews:datepublished'],
  ['name', 'originalpublicationdate'],
  ['itemprop', 'datepublished'],
  ['property', 'og:published_time'],
  ['name', 'article_date_original'],
  ['name', 'publication_date'],
  ['name', 'sailthru.date'],
  ['name', 'publishdate'],
  ['name', 'publish_date'],
  ['name', 'pubdate'],
  ['name', 'dc.date.issued'],
  ['name', 'date'],
];

const IMAGE_META: ReadonlyArray<readonly [attribute: string, value: string]> = [
  ['property', 'og:image'],
  ['property', 'og:image:url'],
  ['property', 'og:image:secure_url'],
  ['name', 'twitter:image'],
  ['name', 'twitter:image:src'],
  ['itemprop', 'image'],
];

const VIDEO_PROVIDERS =
  /(youtube(-nocookie)?\.com|youtu\.be|vimeo\.com|dailymotion\.com|dai\.ly|kewego\.com|twitch\.tv|facebook\.com\/plugins\/video|ted\.com\/talks|wistia\.(com|net)|brightcove)/i;

const URL_DATE = /(?:^|[/_-])((?:19|20)\d{2})[/_-]?(0[1-9]|1[0-2])[/_-]?(0[1-9]|[12]\d|3[01])(?:[/_.-]|$)/;

type Doc = DomDocument;

/** The JSON-LD objects of a page, flattened through `@graph`. */
export function jsonLdObjects(document: Doc): Record<string, unknown>[] {
  const objects: Record<string, unknown>[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
    } else if (value !== null && typeof value === 'object') {
      objects.push(value as Record<string, unknown>);
      visit((value as Record<string, unknown>)['@graph']);
    }
  };
  for (const script of document.querySelectorAll('script[type="application/ld+json"]')) {
    try {
      visit(JSON.parse(script.textContent ?? ''));
    } catch {
      // a page's broken JSON-LD is the page's problem: the other rules still apply
    }
  }
  return objects;
}

function metaContent(document: Doc, attribute: string, value: string): string | undefined {
  for (const element of document.querySelectorAll(`meta[${attribute}]`)) {
    if ((element.getAttribute(attribute) ?? '').toLowerCase() !== value) continue;
    const content = (element.getAttribute('content') ?? element.getAttribute('datetime') ?? '').trim();
    if (content !== '') return content;
  }
  return undefined;
}

/** Authors from author meta tags, JSON-LD, bylines and author links: `By Jane Roe and John Smith` → two names. */
export function extractAuthors(document: Doc, readabilityByline: string | null | undefined): string[] {
  const found: string[] = [];
  for (const marker of AUTHOR_MARKERS) {
    for (const attribute of ['name', 'property', 'itemprop']) {
      const content = metaContent(document, attribute, marker);
      if (content !== undefined) found.push(...bylineNames(content));
    }
  }
  for (const object of jsonLdObjects(document)) {
    for (const author of [object.author].flat()) {
      if (typeof author === 'string') found.push(...bylineNames(author));
      else if (author !== null && typeof author === 'object' && typeof (author as { name?: unknown }).name === 'string')
        found.push(...bylineNames((author as { name: string }).name));
    }
  }
  for (const element of document.querySelectorAll('[rel="author"], [itemprop="author"], .author, .byline, .byl, #author, #byline')) {
    if (element.tagName === 'META') continue;
    const text = (element.querySelector('[itemprop="name"]')?.textContent ?? element.textContent ?? '').trim();
    if (text.length > 0 && text.length < 120) found.push(...bylineNames(text));
  }
  if (readabilityByline !== null && readabilityByline !== undefined) found.push(...bylineNames(readabilityByline));
  const seen = new Set<string>();
  const authors: string[] = [];
  for (const name of found) {
    const key = name.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    authors.push(name);
  }
  return authors;
}

/** `By Jane Roe, John Smith and Ann Lee | Staff` → the three names; URLs, dates and single words that are not names dropped. */
export function bylineNames(text: string): string[] {
  const cleaned =
    text
      .replace(/\s+/g, ' ')
      .replace(/^\s*(written\s+)?by[:\s]+/i, '')
      .replace(/\b(updated|published|posted)\b.*$/i, '')
      .split(/[|•·]/)[0] ?? '';
  return cleaned
    .split(/\s*(?:,|;|\band\b|&)\s*/i)
    .map((part) => part.replace(/^by\s+/i, '').trim())
    .filter((part) => part !== '' && !/https?:|www\.|@|\d/.test(part))
    .filter((part) => /^\p{Lu}/u.test(part) && part.split(' ').length <= 5)
    .filter((part) => !/^(staff|reporter|editor|correspondent|contributor|admin)$/i.test(part));
}

/** The publish date as ISO 8601 without offset (UTC when the source gave one), or null. */
export function extractPublishDate(document: Doc, url: string): string | null {
  for (const [attribute, value] of DATE_META) {
    const parsed = parseDate(metaContent(document, attribute, value));
    if (parsed !== null) return parsed;
  }
  for (const object of jsonLdObjects(document)) {
    const parsed = parseDate(typeof object.datePublished === 'string' ? object.datePublished : undefined);
    if (parsed !== null) return parsed;
  }
  for (const element of document.querySelectorAll('time[datetime], [itemprop="datePublished"]')) {
    const parsed = parseDate(element.getAttribute('datetime') ?? element.getAttribute('content') ?? undefined);
    if (parsed !== null) return parsed;
  }
  const fromUrl = URL_DATE.exec(safePath(url));
  if (fromUrl !== null) return `${fromUrl[1]}-${fromUrl[2]}-${fromUrl[3]}T00:00:00`;
  return null;
}

function safePath(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return '';
  }
}

const ISO_LIKE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:[.,]\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/** Parses a date as pages write it; a date-time with an offset is converted to UTC, one without keeps its wall-clock time. */
export function parseDate(text: string | undefined): string | null {
  if (text === undefined) return null;
  const trimmed = text.trim();
  const iso = ISO_LIKE.exec(trimmed);
  if (iso !== null) {
    const [, year, month, day, hour = '00', minute = '00', second = '00', zone] = iso;
    // Date.UTC reads years below 100 as 19xx
    if (Number(year) < 1900) return null;
    const fields = [Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second)] as const;
    let instant = Date.UTC(...fields);
    if (zone !== undefined && zone.toUpperCase() !== 'Z') {
      const sign = zone.startsWith('-') ? -1 : 1;
      const digits = zone.slice(1).replace(':', '');
      instant -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
    }
    return validInstant(instant);
  }
  // RFC 2822 and other forms Date reads; without a zone Date reads local time, so only zoned forms are trusted
  if (!/(GMT|UTC|[+-]\d{4}\b|\bZ\b)/.test(trimmed)) return null;
  return validInstant(Date.parse(trimmed));
}

function validInstant(instant: number): string | null {
  if (!Number.isFinite(instant)) return null;
  const year = new Date(instant).getUTCFullYear();
  if (year < 1900 || year > 2200) return null;
  return new Date(instant).toISOString().slice(0, 19);
}

/** The top image: og/twitter image meta, `link rel=image_src`, else the largest image of the article. */
export function extractTopImage(document: Doc, articleRoot: DomScope | null, baseUrl: string): string {
  for (const [attribute, value] of IMAGE_META) {
    const content = metaContent(document, attribute, value);
    if (content !== undefined) return absolute(content, baseUrl);
  }
  const link = document.querySelector('link[rel="image_src"]')?.getAttribute('href');
  if (link !== null && link !== undefined && link.trim() !== '') return absolute(link, baseUrl);
  let best: { src: string; area: number } | undefined;
  for (const image of (articleRoot ?? document).querySelectorAll('img')) {
    const src = image.getAttribute('src') ?? image.getAttribute('data-src') ?? '';
    if (src === '' || src.startsWith('data:')) continue;
    const width = Number.parseInt(image.getAttribute('width') ?? '', 10);
    const height = Number.parseInt(image.getAttribute('height') ?? '', 10);
    // unknown sizes count as a middling image, so a sized thumbnail or tracking pixel loses to them
    const area = Number.isFinite(width) && Number.isFinite(height) ? width * height : 40_000;
    if (area < 5_000) continue;
    if (best === undefined || area > best.area) best = { src, area };
  }
  return best === undefined ? '' : absolute(best.src, baseUrl);
}

/** Embedded video players (YouTube, Vimeo, Dailymotion, … iframes and embeds, `<video>` sources, og:video). */
export function extractMovies(document: Doc, articleRoot: DomScope | null, baseUrl: string): string[] {
  const movies = new Set<string>();
  const ogVideo = metaContent(document, 'property', 'og:video') ?? metaContent(document, 'property', 'og:video:url');
  if (ogVideo !== undefined) movies.add(absolute(ogVideo, baseUrl));
  for (const element of (articleRoot ?? document).querySelectorAll('iframe, embed, object, video, video source')) {
    const src = element.getAttribute('src') ?? element.getAttribute('data') ?? element.getAttribute('data-src') ?? '';
    if (src === '') continue;
    const tag = element.tagName.toLowerCase();
    if (tag === 'video' || tag === 'source' || VIDEO_PROVIDERS.test(src)) movies.add(absolute(src, baseUrl));
  }
  return [...movies];
}

function absolute(url: string, base: string): string {
  try {
    return new URL(url.trim(), base).href;
  } catch {
    return url.trim();
  }
}
