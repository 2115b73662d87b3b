import { describe, expect, it } from 'vitest';
import { type Annotation } from '@loom/domain';
import { applyDictionary, Dictionary } from './dictionary.js';
import { CorpusFormatError } from './errors.js';

describe('Dictionary', () => {
  const dictionary = Dictionary.parse('# terms\nNeo4j\tTECHNOLOGY\nneo4j graph\tPRODUCT\nApache AGE\tTECHNOLOGY\n\nGraph\tCONCEPT\n', 'tech.tsv');

  it('matches case-insensitively on token boundaries, longest first, without overlaps', () => {
    const words = [
      { word: 'NEO4J', before: '' },
      { word: 'graph', before: ' ' },
      { word: 'and', before: ' ' },
      { word: 'apache', before: ' ' },
      { word: 'AGE', before: ' ' },
      { word: 'Graphs', before: ' ' },
      { word: 'graph', before: ' ' },
    ];
    expect(dictionary.match(words)).toEqual([
      { start: 0, end: 2, type: 'PRODUCT' },
      { start: 3, end: 5, type: 'TECHNOLOGY' },
      { start: 6, end: 7, type: 'CONCEPT' },
    ]);
    expect(dictionary.size).toBe(4);
  });

  it('refuses a line without a type, naming the file and line', () => {
    expect(() => Dictionary.parse('Neo4j\tTECHNOLOGY\nbroken line\n', 'bad.tsv')).toThrow(CorpusFormatError);
    expect(() => Dictionary.parse('Neo4j\tTECHNOLOGY\nbroken line\n', 'bad.tsv')).toThrow('bad.tsv:2');
  });

  it('merges dictionaries, the first one winning a shared term', () => {
    const other = Dictionary.parse('neo4j\tDATABASE\nPGlite\tTECHNOLOGY\n', 'other.tsv');
    const merged = Dictionary.merge([dictionary, other]);
    expect(merged.match([{ word: 'neo4j', before: '' }, { word: 'pglite', before: ' ' }])).toEqual([
      { start: 0, end: 1, type: 'TECHNOLOGY' },
      { start: 1, end: 2, type: 'TECHNOLOGY' },
    ]);
  });
});

describe('applyDictionary', () => {
  it('overrides token types and rebuilds the entity mentions of matched sentences', () => {
    const words = ['Ada', 'uses', 'Apache', 'AGE', '.'];
    let offset = 0;
    const tokens = words.map((word, i) => {
      const before = i === 0 || word === '.' ? '' : ' ';
      offset += before.length;
      const token = { index: i + 1, word, originalText: word, characterOffsetBegin: offset, characterOffsetEnd: offset + word.length, ner: i === 0 ? 'PERSON' : 'O', before, after: '' };
      offset += word.length;
      return token;
    });
    const annotation: Annotation = { sentences: [{ index: 0, tokens }, { index: 1, tokens: [{ ...tokens[0]!, ner: 'O' }] }] };
    const result = applyDictionary(annotation, Dictionary.parse('apache age\tTECHNOLOGY\n', 'tech.tsv'));
    expect(result.sentences[0]!.tokens.map((token) => token.ner)).toEqual(['PERSON', 'O', 'TECHNOLOGY', 'TECHNOLOGY', 'O']);
    expect(result.sentences[0]!.entitymentions).toEqual([
      { docTokenBegin: 0, docTokenEnd: 1, tokenBegin: 0, tokenEnd: 1, text: 'Ada', characterOffsetBegin: 0, characterOffsetEnd: 3, ner: 'PERSON' },
      { docTokenBegin: 2, docTokenEnd: 4, tokenBegin: 2, tokenEnd: 4, text: 'Apache AGE', characterOffsetBegin: 9, characterOffsetEnd: 19, ner: 'TECHNOLOGY' },
    ]);
    expect(result.sentences[1]).toBe(annotation.sentences[1]);
  });
});
