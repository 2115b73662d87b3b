import { z } from 'zod';

// The schemas of the annotation JSON described in annotation.ts, each field declared once: ANNOTATION_SCHEMA, what
// HTTP services reading or answering it declare (as ANNOTATION_JSON_SCHEMA), and COMPLETE_ANNOTATION_SCHEMA, the same
// with the fields the Token Occurrence Writer needs required. Required fields and their types are checked; the rest of
// CoreNLP's output passes through.

const integerFrom = (min: number) => z.int().min(min, `must be an integer of at least ${min}`);

const tokenSchema = z.looseObject({
  index: integerFrom(1),
  word: z.string(),
  originalText: z.string().optional(),
  lemma: z.string().optional(),
  characterOffsetBegin: integerFrom(0),
  characterOffsetEnd: integerFrom(0),
  pos: z.string().optional(),
  upos: z.string().optional(),
  ner: z.string().optional(),
  before: z.string().optional(),
  after: z.string().optional(),
});

const dependencySchema = z.looseObject({
  dep: z.string(),
  governor: integerFrom(0),
  governorGloss: z.string().optional(),
  dependent: integerFrom(1),
  dependentGloss: z.string().optional(),
});

const entityMentionSchema = z.looseObject({
  tokenBegin: integerFrom(0),
  tokenEnd: integerFrom(1),
  text: z.string(),
  ner: z.string(),
});

const sentenceSchema = z.looseObject({
  index: integerFrom(0).optional(),
  tokens: z.array(tokenSchema),
  basicDependencies: z.array(dependencySchema).optional(),
  entitymentions: z.array(z.looseObject({})).optional(),
});

/** Zod schema of an annotation as HTTP services take and give it. */
export const ANNOTATION_SCHEMA = z.looseObject({
  docId: z.string().optional(),
  sentences: z.array(sentenceSchema),
});

/**
 * Zod schema of an annotation complete enough to store: every sentence has its index, every token its original text,
 * every entity mention its token range; indexes are unique and every range ends at or after its start.
 */
export const COMPLETE_ANNOTATION_SCHEMA = ANNOTATION_SCHEMA.extend({
  sentences: z.array(
    sentenceSchema.extend({
      index: integerFrom(0),
      tokens: z.array(tokenSchema.extend({ originalText: z.string() })),
      entitymentions: z.array(entityMentionSchema).optional(),
    }),
  ),
}).superRefine((annotation, ctx) => {
  const fail = (path: PropertyKey[], message: string): void => ctx.addIssue({ code: 'custom', message, path });
  const sentenceIndexes = new Set<number>();
  annotation.sentences.forEach((sentence, s) => {
    if (sentenceIndexes.has(sentence.index)) fail(['sentences', s, 'index'], 'another sentence has this index');
    sentenceIndexes.add(sentence.index);
    const tokenIndexes = new Set<number>();
    sentence.tokens.forEach((token, t) => {
      const at = ['sentences', s, 'tokens', t];
      if (tokenIndexes.has(token.index)) fail([...at, 'index'], 'another token of the sentence has this index');
      tokenIndexes.add(token.index);
      if (token.characterOffsetEnd < token.characterOffsetBegin) fail([...at, 'characterOffsetEnd'], 'must not be less than characterOffsetBegin');
    });
    sentence.entitymentions?.forEach((mention, m) => {
      if (mention.tokenEnd <= mention.tokenBegin) fail(['sentences', s, 'entitymentions', m, 'tokenEnd'], 'must be greater than tokenBegin');
    });
  });
});

/** JSON schema (draft-07) of the annotation, generated from ANNOTATION_SCHEMA, for HTTP services that read or answer it. */
export const ANNOTATION_JSON_SCHEMA = (() => {
  const { $schema: _draft, ...schema } = z.toJSONSchema(ANNOTATION_SCHEMA, { target: 'draft-7', io: 'input' });
  return schema;
})();

/** An annotation as COMPLETE_ANNOTATION_SCHEMA checked it: Annotation's fields, though `before`, `after` and the glosses may be absent. */
export type CheckedAnnotation = z.output<typeof COMPLETE_ANNOTATION_SCHEMA>;
