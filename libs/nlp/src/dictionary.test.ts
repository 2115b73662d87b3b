import { describe, expect, it } from 'vitest';
import { Dictionary } from './dictionary.js';
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
