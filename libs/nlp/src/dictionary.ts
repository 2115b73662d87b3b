import { CorpusFormatError } from './errors.js';

/** One dictionary NER entry: a term and the entity type it names. */
export interface DictionaryEntry {
  readonly term: string;
  readonly type: string;
}

/** Parses the specification's dictionary TSV: column 1 the term, column 2 the type; blank lines and `#` comments skipped. */
export function parseDictionaryTsv(text: string, source = 'dictionary.tsv'): DictionaryEntry[] {
  const entries: DictionaryEntry[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '' || line.startsWith('#')) return;
    const cols = line.split('\t');
    const term = cols[0]?.trim() ?? '';
    const type = cols[1]?.trim() ?? '';
    if (term === '' || type === '') throw new CorpusFormatError(source, i + 1, 'expected a term and a type separated by a tab');
    entries.push({ term, type });
  });
  return entries;
}

/** A compiled dictionary: entries as lower-cased word sequences, matched longest first. */
export class DictionaryMatcher {
  private readonly byFirst = new Map<string, { words: string[]; type: string }[]>();

  constructor(entries: readonly { words: readonly string[]; type: string }[]) {
    for (const e of entries) {
      if (e.words.length === 0) continue;
      const words = e.words.map((w) => w.toLowerCase());
      const list = this.byFirst.get(words[0]!) ?? [];
      list.push({ words, type: e.type });
      this.byFirst.set(words[0]!, list);
    }
    for (const list of this.byFirst.values()) list.sort((a, b) => b.words.length - a.words.length);
  }

  /** Non-overlapping matches over words (case-insensitive, whole words), scanning left to right and taking the longest at each position. */
  match(words: readonly string[]): { start: number; end: number; type: string }[] {
    const lower = words.map((w) => w.toLowerCase());
    const out: { start: number; end: number; type: string }[] = [];
    for (let i = 0; i < lower.length;) {
      const candidates = this.byFirst.get(lower[i]!);
      const hit = candidates?.find((c) => c.words.every((w, k) => lower[i + k] === w));
      if (hit) {
        out.push({ start: i, end: i + hit.words.length, type: hit.type });
        i += hit.words.length;
      } else i++;
    }
    return out;
  }
}
