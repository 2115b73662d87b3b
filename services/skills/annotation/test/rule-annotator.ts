import { type Annotation, type AnnotationToken } from '@loom/domain';
import { DictionaryMatcher } from '@loom/nlp';
import { type Annotator } from '../src/index.js';

/**
 * Stands in for libs/nlp's trained annotate() in the service's tests: tokens (words and
 * punctuation) and sentences by rule, entities from the dictionary only. The service's own work —
 * pipelines, dictionaries, entity lists, errors — is what these tests check.
 */
export const ruleAnnotator: Annotator = (text, { dictionary }) => {
  const matcher = new DictionaryMatcher(dictionary.map((entry) => ({ words: entry.term.split(/\s+/), type: entry.type.toUpperCase() })));
  const sentences: Annotation['sentences'][number][] = [];
  let tokens: AnnotationToken[] = [];
  let previousEnd = 0;
  for (const match of text.matchAll(/[\p{L}\p{N}]+(?:['-][\p{L}\p{N}]+)*|[^\s\p{L}\p{N}]/gu)) {
    const begin = match.index;
    const word = match[0];
    tokens.push({
      index: tokens.length + 1,
      word,
      originalText: word,
      lemma: word.toLowerCase(),
      characterOffsetBegin: begin,
      characterOffsetEnd: begin + word.length,
      pos: 'NN',
      ner: 'O',
      before: text.slice(previousEnd, begin),
      after: '',
    });
    previousEnd = begin + word.length;
    if (/^[.!?]$/.test(word)) {
      sentences.push({ index: sentences.length, tokens });
      tokens = [];
    }
  }
  if (tokens.length > 0) sentences.push({ index: sentences.length, tokens });
  return {
    sentences: sentences.map((sentence) => {
      const found = matcher.match(sentence.tokens.map((token) => token.word));
      const tokens = sentence.tokens.map((token, i) => ({ ...token, ner: found.find((span) => i >= span.start && i < span.end)?.type ?? 'O' }));
      return { ...sentence, tokens };
    }),
  };
};
