import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '@loom/foundation';
import { type Annotation } from './annotation.js';
import { ANNOTATION_JSON_SCHEMA, ANNOTATION_SCHEMA, COMPLETE_ANNOTATION_SCHEMA } from './annotation-schema.js';
import { parseWithSchema } from './zod-violations.js';

const fixture = JSON.parse(readFileSync(new URL('../test/fixtures/ewt-dev.annotation.json', import.meta.url), 'utf8')) as { annotation: Annotation };

function violations(value: unknown): { field: string; description: string }[] {
  try {
    parseWithSchema(COMPLETE_ANNOTATION_SCHEMA, value, 'body._annotation');
  } catch (error) {
    if (error instanceof ValidationError) return error.violations.map(({ field, description }) => ({ field, description }));
    throw error;
  }
  return [];
}

describe('COMPLETE_ANNOTATION_SCHEMA', () => {
  it('accepts an annotation libs/nlp wrote, keeping the fields it does not name', () => {
    expect(parseWithSchema(COMPLETE_ANNOTATION_SCHEMA, fixture.annotation)).toEqual(fixture.annotation);
  });

  it('names each bad field by its JSON path below the base', () => {
    expect(violations({ sentences: [{ index: 0, tokens: [{ index: 0, word: 'x', originalText: 'x', characterOffsetBegin: 0 }] }] })).toEqual([
      { field: 'body._annotation.sentences[0].tokens[0].index', description: 'must be an integer of at least 1' },
      { field: 'body._annotation.sentences[0].tokens[0].characterOffsetEnd', description: 'required field is missing' },
    ]);
    expect(violations({ sentences: 'none' })).toEqual([{ field: 'body._annotation.sentences', description: 'expected an array, got a string' }]);
  });

  it('refuses indexes used twice and ranges that end before they start', () => {
    const token = (index: number, begin: number, end: number) => ({
      index,
      word: 'w',
      originalText: 'w',
      characterOffsetBegin: begin,
      characterOffsetEnd: end,
    });
    const sentence = { index: 0, tokens: [token(1, 0, 1), token(1, 5, 2)], entitymentions: [{ tokenBegin: 1, tokenEnd: 1, text: 'w', ner: 'PERSON' }] };
    expect(violations({ sentences: [sentence, { index: 0, tokens: [] }] })).toEqual([
      { field: 'body._annotation.sentences[0].tokens[1].index', description: 'another token of the sentence has this index' },
      { field: 'body._annotation.sentences[0].tokens[1].characterOffsetEnd', description: 'must not be less than characterOffsetBegin' },
      { field: 'body._annotation.sentences[0].entitymentions[0].tokenEnd', description: 'must be greater than tokenBegin' },
      { field: 'body._annotation.sentences[1].index', description: 'another sentence has this index' },
    ]);
  });

  it('requires what storing needs and HTTP services do not: the sentence index, the original text', () => {
    const lenient = { sentences: [{ tokens: [{ index: 1, word: 'x', characterOffsetBegin: 0, characterOffsetEnd: 1 }] }] };
    expect(ANNOTATION_SCHEMA.safeParse(lenient).success).toBe(true);
    expect(violations(lenient).map(({ field }) => field)).toEqual([
      'body._annotation.sentences[0].index',
      'body._annotation.sentences[0].tokens[0].originalText',
    ]);
  });
});

describe('ANNOTATION_JSON_SCHEMA', () => {
  it('is published as a draft-07 JSON schema requiring what HTTP services require', () => {
    expect(ANNOTATION_JSON_SCHEMA).toMatchObject({ type: 'object', required: ['sentences'] });
    expect(ANNOTATION_JSON_SCHEMA).not.toHaveProperty('$schema');
    const sentence = (ANNOTATION_JSON_SCHEMA.properties?.['sentences'] as { items: { required: string[] } }).items;
    expect(sentence.required).toEqual(['tokens']);
  });
});
