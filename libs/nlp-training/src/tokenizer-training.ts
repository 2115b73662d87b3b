import { itemAt, type SplitterExample, type TokenizerLexicon } from '@loom/nlp';
import { surfaceTokens, type ConlluSentence, type ConlluSurfaceToken } from './conllu.js';

/**
 * Learns the tokenizer lexicon from treebank sentences: abbreviations, whole hyphenated words, multi-word tokens, and
 * the prefixes of hyphenated words kept whole (in at least two different words, and split less than half as often).
 */
export function learnLexicon(sentences: readonly ConlluSentence[]): TokenizerLexicon {
  const abbreviations = new Set<string>();
  const hyphenated = new Set<string>();
  const asMwt = new Map<string, { count: number; parts: number[] }>();
  const asWord = new Map<string, number>();
  const prefixWords = new Map<string, Set<string>>();
  const prefixSplits = new Map<string, number>();
  for (const sentence of sentences) {
    const tokens = surfaceTokens(sentence);
    for (const [position, token] of tokens.entries()) {
      const lower = token.form.toLowerCase();
      const split = splitPrefix(tokens, position);
      if (split !== undefined) prefixSplits.set(split, (prefixSplits.get(split) ?? 0) + 1);
      if (token.first === token.last) {
        asWord.set(lower, (asWord.get(lower) ?? 0) + 1);
        if (lower.length > 1 && lower.endsWith('.') && /\p{L}/u.test(lower)) abbreviations.add(lower);
        if (/[\p{L}\p{N}]-[\p{L}\p{N}]/u.test(lower)) hyphenated.add(lower);
        const prefix = /^(\p{L}+)-\p{L}/u.exec(lower)?.[1];
        if (prefix !== undefined) prefixWords.set(prefix, (prefixWords.get(prefix) ?? new Set()).add(lower));
        continue;
      }
      const words = sentence.words.slice(token.first - 1, token.last).map((word) => word.form);
      if (words.join('').toLowerCase() !== lower) continue;
      const entry = asMwt.get(lower) ?? { count: 0, parts: words.map((word) => word.length) };
      entry.count++;
      asMwt.set(lower, entry);
    }
  }
  const multiwordTokens = new Map<string, number[]>();
  for (const [form, { count, parts }] of asMwt) if (count > (asWord.get(form) ?? 0)) multiwordTokens.set(form, parts);
  const hyphenPrefixes = new Set<string>();
  for (const [prefix, words] of prefixWords) if (words.size >= 2 && 2 * (prefixSplits.get(prefix) ?? 0) < words.size) hyphenPrefixes.add(prefix);
  return { abbreviations, hyphenated, multiwordTokens, hyphenPrefixes };
}

/** The lower-cased word before a hyphen the treebank split off inside a word (`long` of `long - term` written `long-term`). */
function splitPrefix(tokens: readonly ConlluSurfaceToken[], position: number): string | undefined {
  const hyphen = tokens[position + 1];
  const after = tokens[position + 2];
  const token = itemAt(tokens, position, 'tokens');
  if (hyphen?.form !== '-' || token.spaceAfter || hyphen.spaceAfter || !after || !/^\p{L}+$/u.test(token.form) || !/^\p{L}/u.test(after.form)) return undefined;
  return token.form.toLowerCase();
}

/** Documents of the treebank as splitter examples: sentences joined by a space, paragraphs by a blank line. */
export function splitterExamples(sentences: readonly ConlluSentence[]): SplitterExample[] {
  const docs: SplitterExample[] = [];
  let current: { tokens: string[]; spaces: string[]; ends: boolean[] } | undefined;
  for (const sentence of sentences) {
    if (!current || sentence.newDoc) {
      if (current) docs.push(current);
      current = { tokens: [], spaces: [], ends: [] };
    } else if (sentence.newPar && current.spaces.length > 0) current.spaces[current.spaces.length - 1] = '\n\n';
    const tokens = surfaceTokens(sentence);
    for (const [position, token] of tokens.entries()) {
      current.tokens.push(token.form);
      current.spaces.push(position === tokens.length - 1 ? ' ' : token.spaceAfter ? ' ' : '');
      current.ends.push(position === tokens.length - 1);
    }
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
  sentences.forEach((sentence, sentenceIndex) => {
    if (sentenceIndex > 0) text += sentence.newPar ? '\n\n' : ' ';
    const surface = surfaceTokens(sentence);
    surface.forEach((token, position) => {
      tokens.push({ start: text.length, end: text.length + token.form.length, sentence: sentenceIndex, first: token.first, last: token.last });
      text += token.form;
      if (token.spaceAfter && position < surface.length - 1) text += ' ';
    });
  });
  return { text, tokens };
}
