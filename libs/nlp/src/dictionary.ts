import { type Annotation, type AnnotationEntityMention, type AnnotationToken, NO_ENTITY } from '@loom/domain';
import { CorpusFormatError } from './errors.js';

/** One dictionary match: tokens `[start, end)` of the sequence given to `match`, and the entity type. */
export interface DictionaryMatch {
  readonly start: number;
  readonly end: number;
  readonly type: string;
}

/** What `match` needs of a token: its text and whether whitespace precedes it. */
export interface DictionaryToken {
  readonly word: string;
  readonly before: string;
}

/**
 * A dictionary model for entity recognition: the specification's TSV (column 1 the term,
 * column 2 the type), matched case-insensitively on token boundaries, longest match first.
 */
export class Dictionary {
  private constructor(
    private readonly types: ReadonlyMap<string, string>,
    private readonly longestTerm: number,
  ) {}

  /** Reads TSV text; blank lines and lines starting with `#` are skipped, a line without a term and a type fails naming the line. */
  static parse(text: string, source: string): Dictionary {
    const types = new Map<string, string>();
    let longest = 0;
    text.split(/\r?\n/).forEach((line, index) => {
      if (line.trim() === '' || line.startsWith('#')) return;
      const [term = '', type = ''] = line.split('\t');
      if (term.trim() === '' || type.trim() === '') throw new CorpusFormatError(source, index + 1, 'expected a term and a type separated by a tab');
      const key = normalize(term);
      // the first entry of a term wins, as in CoreNLP's RegexNER
      if (!types.has(key)) types.set(key, type.trim());
      longest = Math.max(longest, key.length);
    });
    return new Dictionary(types, longest);
  }

  /** Several dictionaries as one; an earlier dictionary's type wins for a term in both. */
  static merge(dictionaries: readonly Dictionary[]): Dictionary {
    const types = new Map<string, string>();
    let longest = 0;
    for (const dictionary of dictionaries) {
      for (const [term, type] of dictionary.types) if (!types.has(term)) types.set(term, type);
      longest = Math.max(longest, dictionary.longestTerm);
    }
    return new Dictionary(types, longest);
  }

  /** Number of terms. */
  get size(): number {
    return this.types.size;
  }

  /** Non-overlapping matches, left to right, the longest match at each position first. */
  match(tokens: readonly DictionaryToken[]): DictionaryMatch[] {
    const matches: DictionaryMatch[] = [];
    let start = 0;
    while (start < tokens.length) {
      let found: DictionaryMatch | undefined;
      let text = '';
      for (let end = start; end < tokens.length; end += 1) {
        const token = tokens[end]!;
        text += (end > start && token.before !== '' ? ' ' : '') + token.word.toLowerCase();
        if (text.length > this.longestTerm) break;
        const type = this.types.get(text);
        if (type !== undefined) found = { start, end: end + 1, type };
      }
      if (found === undefined) start += 1;
      else {
        matches.push(found);
        start = found.end;
      }
    }
    return matches;
  }
}

function normalize(term: string): string {
  return term.trim().toLowerCase().replace(/\s+/g, ' ');
}

/**
 * The annotation with dictionary matches overriding the statistical NER: each matched token's
 * `ner` becomes the dictionary type, and `entitymentions` of a sentence with a match are rebuilt
 * from the tokens (one mention per run of tokens of one type, as CoreNLP writes them).
 */
export function applyDictionary(annotation: Annotation, dictionary: Dictionary): Annotation {
  let documentOffset = 0;
  const sentences = annotation.sentences.map((sentence) => {
    const firstToken = documentOffset;
    documentOffset += sentence.tokens.length;
    const matches = dictionary.match(sentence.tokens);
    if (matches.length === 0) return sentence;
    const ner = sentence.tokens.map((token) => token.ner ?? NO_ENTITY);
    const dictionaryRun = sentence.tokens.map(() => -1);
    matches.forEach((found, m) => {
      for (let i = found.start; i < found.end; i += 1) {
        ner[i] = found.type;
        dictionaryRun[i] = m;
      }
    });
    const tokens = sentence.tokens.map((token, i) => ({ ...token, ner: ner[i]! }));
    return { ...sentence, tokens, entitymentions: mentionsOf(tokens, dictionaryRun, firstToken) };
  });
  return { ...annotation, sentences };
}

/** One mention per run of tokens with one type; a dictionary match is one mention even beside another of its type. */
function mentionsOf(tokens: readonly AnnotationToken[], dictionaryRun: readonly number[], firstToken: number): AnnotationEntityMention[] {
  const mentions: AnnotationEntityMention[] = [];
  let start = 0;
  while (start < tokens.length) {
    const type = tokens[start]!.ner ?? NO_ENTITY;
    let end = start + 1;
    while (end < tokens.length && tokens[end]!.ner === type && dictionaryRun[end] === dictionaryRun[start]) end += 1;
    if (type !== NO_ENTITY) {
      const first = tokens[start]!;
      const last = tokens[end - 1]!;
      mentions.push({
        docTokenBegin: firstToken + start,
        docTokenEnd: firstToken + end,
        tokenBegin: start,
        tokenEnd: end,
        text: tokens.slice(start, end).map((token, i) => (i === 0 ? token.originalText : `${token.before}${token.originalText}`)).join(''),
        characterOffsetBegin: first.characterOffsetBegin,
        characterOffsetEnd: last.characterOffsetEnd,
        ner: type,
      });
    }
    start = end;
  }
  return mentions;
}
