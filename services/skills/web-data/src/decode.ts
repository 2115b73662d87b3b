import { TextDecoder } from 'node:util';

/** Decodes page bytes: the Content-Type charset, else a `<meta charset>` in the first bytes, else UTF-8. */
export function decodeHtml(body: Buffer, charset: string | undefined): string {
  const sniffed = charset ?? /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(body.subarray(0, 2048).toString('latin1'))?.[1];
  const label = sniffed?.toLowerCase() ?? 'utf-8';
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(label);
  } catch {
    // an unknown label is the page's error; browsers fall back to UTF-8 too
    decoder = new TextDecoder('utf-8');
  }
  return decoder.decode(body);
}
