/**
 * JSON schema (draft-07) of the annotation JSON described in annotation.ts, for HTTP services
 * that read or answer it: required fields and their types are checked, the rest of CoreNLP's
 * output passes through.
 */
export const ANNOTATION_JSON_SCHEMA = {
  type: 'object',
  required: ['sentences'],
  properties: {
    docId: { type: 'string' },
    sentences: {
      type: 'array',
      items: {
        type: 'object',
        required: ['tokens'],
        properties: {
          index: { type: 'integer', minimum: 0 },
          tokens: {
            type: 'array',
            items: {
              type: 'object',
              required: ['index', 'word', 'characterOffsetBegin', 'characterOffsetEnd'],
              properties: {
                index: { type: 'integer', minimum: 1 },
                word: { type: 'string' },
                originalText: { type: 'string' },
                lemma: { type: 'string' },
                characterOffsetBegin: { type: 'integer', minimum: 0 },
                characterOffsetEnd: { type: 'integer', minimum: 0 },
                pos: { type: 'string' },
                upos: { type: 'string' },
                ner: { type: 'string' },
                before: { type: 'string' },
                after: { type: 'string' },
              },
            },
          },
          basicDependencies: {
            type: 'array',
            items: {
              type: 'object',
              required: ['dep', 'governor', 'dependent'],
              properties: {
                dep: { type: 'string' },
                governor: { type: 'integer', minimum: 0 },
                governorGloss: { type: 'string' },
                dependent: { type: 'integer', minimum: 1 },
                dependentGloss: { type: 'string' },
              },
            },
          },
          entitymentions: { type: 'array', items: { type: 'object' } },
        },
      },
    },
  },
} as const;
