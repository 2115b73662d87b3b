import { itemAt } from './checked.js';
import { CorpusFormatError } from './errors.js';

/** One dictionary NER entry: a term and the entity type it names. */
export interface DictionaryEntry {
  readonly term: string;
  readonly type: string;
}

/** Parses the specification's dictionary TSV: column 1 the term, column 2 the type; blank lines and `#` comments skipped. */
export function parseDictionaryTsv(text: string, source = 'dictionary.tsv'): DictionaryEntry[] {
  const entries: DictionaryEntry[] = [];
  text.split(/\r?\n/).forEach((line, lineIndex) => {
    if (line.trim() === '' || line.startsWith('#')) return;
    const cols = line.split('\t');
    const term = cols[0]?.trim() ?? '';
    const type = cols[1]?.trim() ?? '';
    if (term === '' || type === '') throw new CorpusFormatError(source, lineIndex + 1, 'expected a term and a type separated by a tab');
    entries.push({ term, type });
  });
  return entries;
}

/** A compiled dictionary: entries as lower-cased word sequences, matched longest first. */
export class DictionaryMatcher {
  private readonly byFirst = new Map<string, { words: string[]; type: string }[]>();

  constructor(entries: readonly { words: readonly string[]; type: string }[]) {
    for (const entry of entries) {
      if (entry.words.length === 0) continue;
      const words = entry.words.map((word) => word.toLowerCase());
      const list = this.byFirst.get(itemAt(words, 0, 'words')) ?? [];
      list.push({ words, type: entry.type });
      this.byFirst.set(itemAt(words, 0, 'words'), list);
    }
    for (const list of this.byFirst.values()) list.sort((left, right) => right.words.length - left.words.length);
  }

  /** Non-overlapping matches over words (case-insensitive, whole words), scanning left to right and taking the longest at each position. */
  match(words: readonly string[]): { start: number; end: number; type: string }[] {
    const lower = words.map((word) => word.toLowerCase());
    const out: { start: number; end: number; type: string }[] = [];
    for (let start = 0; start < lower.length;) {
      const candidates = this.byFirst.get(itemAt(lower, start, 'lower'));
      const hit = candidates?.find((candidate) => candidate.words.every((word, offset) => lower[start + offset] === word));
      if (hit) {
        out.push({ start: start, end: start + hit.words.length, type: hit.type });
        start += hit.words.length;
      } else start++;
    }
    return out;
  }
}
