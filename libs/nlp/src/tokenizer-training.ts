import { surfaceTokens, type ConlluSentence } from './conllu.js';
import type { SplitterExample } from './sentences.js';
import type { TokenizerLexicon } from './tokenizer.js';

/** Learns the tokenizer lexicon from treebank sentences: abbreviations, whole hyphenated words, multi-word tokens. */
export function learnLexicon(sentences: readonly ConlluSentence[]): TokenizerLexicon {
  const abbreviations = new Set<string>();
  const hyphenated = new Set<string>();
  const asMwt = new Map<string, { count: number; parts: number[] }>();
  const asWord = new Map<string, number>();
  for (const s of sentences) {
    for (const t of surfaceTokens(s)) {
      const lower = t.form.toLowerCase();
      if (t.first === t.last) {
        asWord.set(lower, (asWord.get(lower) ?? 0) + 1);
        if (lower.length > 1 && lower.endsWith('.') && /\p{L}/u.test(lower)) abbreviations.add(lower);
        if (/[\p{L}\p{N}]-[\p{L}\p{N}]/u.test(lower)) hyphenated.add(lower);
        continue;
      }
      const words = s.words.slice(t.first - 1, t.last).map((w) => w.form);
      if (words.join('').toLowerCase() !== lower) continue;
      const entry = asMwt.get(lower) ?? { count: 0, parts: words.map((w) => w.length) };
      entry.count++;
      asMwt.set(lower, entry);
    }
  }
  const multiwordTokens = new Map<string, number[]>();
  for (const [form, { count, parts }] of asMwt) if (count > (asWord.get(form) ?? 0)) multiwordTokens.set(form, parts);
  return { abbreviations, hyphenated, multiwordTokens };
}

/** Documents of the treebank as splitter examples: sentences joined by a space, paragraphs by a blank line. */
export function splitterExamples(sentences: readonly ConlluSentence[]): SplitterExample[] {
  const docs: SplitterExample[] = [];
  let current: { tokens: string[]; spaces: string[]; ends: boolean[] } | undefined;
  for (const s of sentences) {
    if (!current || s.newDoc) {
      if (current) docs.push(current);
      current = { tokens: [], spaces: [], ends: [] };
    } else if (s.newPar && current.spaces.length > 0) current.spaces[current.spaces.length - 1] = '\n\n';
    const tokens = surfaceTokens(s);
    tokens.forEach((t, i) => {
      current!.tokens.push(t.form);
      current!.spaces.push(i === tokens.length - 1 ? ' ' : t.spaceAfter ? ' ' : '');
      current!.ends.push(i === tokens.length - 1);
    });
  }
  if (current) docs.push(current);
  return docs;
}

/** Raw text of treebank documents as the evaluation feeds it: sentences joined by a space, paragraphs and documents by a blank line. */
export function rawText(sentences: readonly ConlluSentence[]): {
  text: string;
  tokens: { start: number; end: number; sentence: number; first: number; last: number }[];
} {
  let text = '';
  const tokens: { start: number; end: number; sentence: number; first: number; last: number }[] = [];
  sentences.forEach((s, si) => {
    if (si > 0) text += s.newPar ? '\n\n' : ' ';
    const surface = surfaceTokens(s);
    surface.forEach((t, i) => {
      tokens.push({ start: text.length, end: text.length + t.form.length, sentence: si, first: t.first, last: t.last });
      text += t.form;
      if (t.spaceAfter && i < surface.length - 1) text += ' ';
    });
  });
  return { text, tokens };
}
