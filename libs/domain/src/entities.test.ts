import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type Annotation } from './annotation.js';
import { entitiesOf, isAnnotation, mergedEntitiesOf } from './entities.js';

/** Two real sentences of UD English EWT dev with their UNER entities (see the fixture's `source`). */
const fixture = JSON.parse(readFileSync(new URL('../test/fixtures/ewt-dev.annotation.json', import.meta.url), 'utf8')) as {
  text: string;
  annotation: Annotation;
};
const { text, annotation } = fixture;

describe('entitiesOf', () => {
  it('merges consecutive tokens of one type into one entity for /annotate, lower-casing the type', () => {
    expect(entitiesOf(annotation, true)).toStrictEqual({
      person: ['Ben Goodger', 'Jim Lobe'],
      organization: ['Mozilla Firefox'],
      location: ['Fallujah', 'Iraq', 'Washington'],
    });
  });

  it('keeps every token apart for /v2/annotate', () => {
    expect(entitiesOf(annotation, false)).toStrictEqual({
      person: ['Ben', 'Goodger', 'Jim', 'Lobe'],
      organization: ['Mozilla', 'Firefox'],
      location: ['Fallujah', 'Iraq', 'Washington'],
    });
  });

  it('lists an entity once, and a dictionary type under its lower-cased name', () => {
    const token = (index: number, word: string, begin: number, ner: string) => ({
      index,
      word,
      originalText: word,
      characterOffsetBegin: begin,
      characterOffsetEnd: begin + word.length,
      ner,
      before: ' ',
      after: ' ',
    });
    const twice: Annotation = {
      sentences: [
        { index: 0, tokens: [token(1, 'Neo4j', 0, 'TECHNOLOGY'), token(2, 'and', 6, 'O'), token(3, 'Neo4j', 10, 'TECHNOLOGY')] },
        { index: 1, tokens: [token(1, 'Neo4j', 17, 'TECHNOLOGY')] },
      ],
    };
    expect(entitiesOf(twice, true)).toStrictEqual({ technology: ['Neo4j'] });
    expect(mergedEntitiesOf(twice).TECHNOLOGY).toHaveLength(3);
  });
});

describe('mergedEntitiesOf', () => {
  it('merges multi-token entities whichever endpoint made the annotation, with offsets into the document', () => {
    const merged = mergedEntitiesOf(annotation);
    expect(merged).toStrictEqual({
      PERSON: [
        { sentenceIndex: 0, beginCharacter: 0, endCharacter: 11, label: 'PERSON', value: 'Ben Goodger' },
        { sentenceIndex: 1, beginCharacter: 54, endCharacter: 62, label: 'PERSON', value: 'Jim Lobe' },
      ],
      ORGANIZATION: [{ sentenceIndex: 0, beginCharacter: 37, endCharacter: 52, label: 'ORGANIZATION', value: 'Mozilla Firefox' }],
      LOCATION: [
        { sentenceIndex: 1, beginCharacter: 109, endCharacter: 117, label: 'LOCATION', value: 'Fallujah' },
        { sentenceIndex: 1, beginCharacter: 135, endCharacter: 139, label: 'LOCATION', value: 'Iraq' },
        { sentenceIndex: 1, beginCharacter: 147, endCharacter: 157, label: 'LOCATION', value: 'Washington' },
      ],
    });
    for (const mention of Object.values(merged).flat()) expect(text.slice(mention.beginCharacter, mention.endCharacter)).toBe(mention.value);
  });

  it('never merges across sentences, and ignores tokens without ner', () => {
    const lone = (index: number, sentence: number, ner?: string) => ({
      index: 1,
      word: `w${index}`,
      originalText: `w${index}`,
      characterOffsetBegin: index * 3,
      characterOffsetEnd: index * 3 + 2,
      before: ' ',
      after: ' ',
      ...(ner === undefined ? {} : { ner }),
      sentence,
    });
    const split: Annotation = {
      sentences: [
        { index: 0, tokens: [lone(0, 0, 'PERSON')] },
        { index: 1, tokens: [lone(1, 1, 'PERSON'), lone(2, 1)] },
      ],
    };
    expect(mergedEntitiesOf(split).PERSON?.map((mention) => mention.value)).toStrictEqual(['w0', 'w1']);
  });
});

describe('isAnnotation', () => {
  it('tells an annotation from other JSON', () => {
    expect(isAnnotation(annotation)).toBe(true);
    expect(isAnnotation({ sentences: [{}] })).toBe(false);
    expect(isAnnotation([])).toBe(false);
    expect(isAnnotation('text')).toBe(false);
  });
});
