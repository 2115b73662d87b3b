import { z } from 'zod';
import { type FieldViolation, ValidationError } from '@loom/foundation';
import { doc, publishJsonSchema } from './workflow-schema.js';
import { listReferences, rulePathsSize } from './relation-rule-paths.js';
import { violationsOf } from './zod-violations.js';

// The rule language of the Rule Based Relation Extraction component (its `rules` option): the one
// description of it, from which the parser and the published JSON Schema
// (schema/relation-rules.schema.json) are both made. A rule finds a relation between two named
// entities of ONE sentence by a path of Universal Dependencies between a token of each.

/** The universal POS tags of Universal Dependencies v2. */
export const UNIVERSAL_POS_TAGS = [
  'ADJ', 'ADP', 'ADV', 'AUX', 'CCONJ', 'DET', 'INTJ', 'NOUN', 'NUM', 'PART', 'PRON', 'PROPN', 'PUNCT', 'SCONJ', 'SYM', 'VERB', 'X',
] as const; // prettier-ignore

/** Most rules in one rule set, and most steps in one path: each rule is one statement, each step a join. */
export const MAX_RULES = 100;
export const MAX_PATH_STEPS = 6;
/** Most hops one repeated step may take (`repeat.max`). */
export const MAX_REPEAT = 4;
/**
 * Most fixed paths one rule may stand for once its optional and repeated steps and its steps over relations of
 * different kinds are spelled out (each is one branch of the rule's statement), and most hops in one of them.
 */
export const MAX_RULE_PATHS = 16;
export const MAX_PATH_HOPS = 8;
/** Most named word lists in a rule set, and most words in one. */
export const MAX_LISTS = 50;
export const MAX_LIST_WORDS = 1000;

const UD_RELATION = /^[a-z]+(:[a-z]+)?$/;
const ENTITY_TYPE = /^[A-Z][A-Z0-9_]{0,62}$/;
const RELATION_TYPE = /^[A-Z][A-Z0-9_]{0,62}$/;
const RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const LIST_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

const nonEmptyList = <T extends z.ZodType>(item: T, max = 200) => z.array(item).min(1, { message: 'must list at least one value' }).max(max);
const word = () => z.string().min(1).max(100);
const listReference = doc(
  z.strictObject({
    list: doc(z.string().regex(LIST_NAME, { message: 'must be the name of a list of the rule set (letters, digits, _ or -)' }), {
      description: "The name of a word list defined in the rule set's `lists`.",
    }),
  }),
  { description: 'All the words of a named list of the rule set (`{"list": "job-titles"}`).' },
);
const words = () => nonEmptyList(z.union([word(), listReference]));

const udRelation = doc(z.string().regex(UD_RELATION, { message: 'must be a Universal Dependencies relation in lower case, e.g. nsubj or obl:tmod' }), {
  description:
    'A Universal Dependencies relation, lower case (`nsubj`, `obl`, `nsubj:pass`). A relation without subtype also matches its subtypes (`obl` matches `obl:tmod`).',
});
const udRelations = doc(z.union([udRelation, nonEmptyList(udRelation)]), { description: 'One relation, or a list of which any matches.' });
const entityTypes = doc(nonEmptyList(z.string().regex(ENTITY_TYPE, { message: 'must be an entity type in upper case, e.g. PERSON' })), {
  description:
    'Named-entity types as the annotation writes them, upper case: PERSON, ORGANIZATION, LOCATION, or a dictionary type; PROPN stands for a proper noun outside every entity.',
});
const uposList = () => nonEmptyList(z.enum(UNIVERSAL_POS_TAGS));

const dependentFields = {
  relation: udRelations,
  lemma: doc(words(), { description: 'Lemmas of the dependent, compared in lower case (words, or `{"list": name}`).' }).optional(),
  notLemma: doc(words(), { description: 'Lemmas the dependent must not have.' }).optional(),
  upos: doc(uposList(), { description: 'Universal POS tags of the dependent.' }).optional(),
};
const innerDependent = doc(z.strictObject(dependentFields), { description: 'A dependent of the dependent.' });
const dependent = doc(
  z.strictObject({
    ...dependentFields,
    dependents: doc(nonEmptyList(innerDependent, 10), {
      description:
        'Dependents the dependent itself must have ("out of": `{"relation": "obl", "dependents": [{"relation": "case", "lemma": ["of"]}]}`); one level only.',
    }).optional(),
  }),
  { description: 'A dependent the token must (or, in `noDependents`, must not) have, off the path: e.g. `{"relation": "case", "lemma": ["in"]}`.' },
);

const tokenConstraint = doc(
  z.strictObject({
    lemma: doc(words(), { description: 'The token is one of these lemmas (compared in lower case; words, or `{"list": name}`).' }).optional(),
    notLemma: doc(words(), { description: 'The token is none of these lemmas.' }).optional(),
    pos: doc(nonEmptyList(word()), { description: 'The token has one of these Penn Treebank (XPOS) tags.' }).optional(),
    upos: doc(uposList(), { description: 'The token has one of these universal POS tags.' }).optional(),
    entity: entityTypes.optional(),
    negated: doc(z.boolean(), {
      description:
        "false: the token must not be negated (no `advmod` or `det` dependent whose lemma is not, never, no or n't); true: it must be. Absent: either.",
    }).optional(),
    dependents: doc(nonEmptyList(dependent, 10), { description: 'Dependents the token must have, each off the path.' }).optional(),
    noDependents: doc(nonEmptyList(dependent, 10), {
      description: 'Dependents the token must not have (e.g. `{"relation": "case", "lemma": ["without"]}`).',
    }).optional(),
  }),
  { description: 'Constraints on one token; all that are given must hold.' },
);

const entityEnd = doc(
  z.strictObject({
    entity: doc(entityTypes, {
      description:
        'The end is a token of a named entity of one of these types; the type PROPN among them also admits a proper noun outside every entity (`["ORGANIZATION", "PROPN"]`: an organisation, or a name NER missed). Absent: a token of a named entity of any type, or a proper noun (PROPN) outside any entity. A proper noun is reported as its span: its head with the head\'s flat and compound proper nouns, typed PROPN.',
    }).optional(),
    token: tokenConstraint.optional(),
  }),
  { description: 'One end of the relation: a token of a named entity (of these types), or a proper-noun span when no type is given.' },
);

const repeat = doc(
  z
    .strictObject({
      min: doc(z.number().int().min(0).max(MAX_REPEAT), { description: 'Fewest hops (default 1; 0 makes the step optional).' }).optional(),
      max: doc(z.number().int().min(1).max(MAX_REPEAT), { description: `Most hops (1 to ${MAX_REPEAT}).` }),
    })
    .refine((value) => (value.min ?? 1) <= value.max, { message: 'min must not be above max', path: ['min'] }),
  {
    description:
      'The step may be taken several times in a row (a chain of `conj`, `appos` or `flat`); its `token` constraints hold for every token it reaches.',
  },
);

const step = doc(
  z.strictObject({
    relation: udRelations,
    direction: doc(z.enum(['up', 'down']), {
      description: '`up`: from the current token to its head (the current token is the dependent); `down`: from the current token to a dependent.',
    }),
    token: tokenConstraint.optional(),
    optional: doc(z.boolean(), { description: 'true: the path may also skip this step (as `repeat.min` 0).' }).optional(),
    repeat: repeat.optional(),
  }),
  { description: 'One dependency on the path and the token it reaches. The last step reaches the object token: its constraints go in `object.token`.' },
);

const rule = doc(
  z
    .strictObject({
      name: doc(z.string().regex(RULE_NAME, { message: 'must be 1 to 64 letters, digits, _, . or -, starting with a letter or digit' }), {
        description: 'Unique name of the rule; each relation found names the rule that found it.',
      }),
      relation: doc(z.string().regex(RELATION_TYPE, { message: 'must be a relationship type in upper case, e.g. WORKS_FOR' }), {
        description: 'The relation found, upper case: the relationship type written to a target graph (`WORKS_FOR`).',
      }),
      description: z.string().max(1000).optional(),
      subject: entityEnd,
      object: entityEnd,
      path: doc(z.array(step).min(1, { message: 'must have at least one step' }).max(MAX_PATH_STEPS), {
        description: `The dependencies from the subject token to the object token, in order (1 to ${MAX_PATH_STEPS} steps), all inside one sentence.`,
      }),
      examples: doc(
        z.strictObject({
          finds: doc(
            z
              .array(
                z.strictObject({
                  text: z.string().min(1).max(1000),
                  subject: doc(z.string().min(1).max(200), { description: 'The text of the subject the rule reports.' }),
                  object: doc(z.string().min(1).max(200), { description: 'The text of the object the rule reports.' }),
                }),
              )
              .max(20),
            { description: 'Sentences the rule finds, each with the subject and object it reports (a sentence listed twice has two pairs).' },
          ).optional(),
          misses: doc(z.array(z.string().min(1).max(1000)).max(20), { description: 'Sentences, near misses, in which the rule finds nothing.' }).optional(),
        }),
        { description: 'Sentences the rule is meant to find and near misses it must not: documentation, and checked by the tests of a shipped rule set.' },
      ).optional(),
    })
    .superRefine((value, ctx) => {
      const last = value.path.length - 1;
      if (last >= 0 && value.path[last]?.token !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['path', last, 'token'], message: 'the last step reaches the object token: put its constraints in object.token' });
      }
      const size = rulePathsSize(value.path);
      if (size.paths > MAX_RULE_PATHS || size.hops > MAX_PATH_HOPS) {
        ctx.addIssue({
          code: 'custom',
          path: ['path'],
          message:
            `stands for ${size.paths} fixed paths of up to ${size.hops} hops once optional and repeated steps and steps over relations of different kinds are spelled out; ` +
            `at most ${MAX_RULE_PATHS} paths of ${MAX_PATH_HOPS} hops keep a rule's cost bounded: split the rule`,
        });
      }
    }),
  { description: 'One rule: a relation between a subject entity and an object entity joined by a path of dependencies.' },
);

/** Shape of the `rules` option of Rule Based Relation Extraction. */
export const relationRulesSchema = z
  .strictObject({
    $schema: z.string().optional(),
    lists: doc(
      z
        .record(
          z.string().regex(LIST_NAME, { message: 'must be a list name: letters, digits, _ or -, starting with a letter' }),
          nonEmptyList(word(), MAX_LIST_WORDS),
        )
        .refine((value) => Object.keys(value).length <= MAX_LISTS, { message: `must define at most ${MAX_LISTS} lists` }),
      { description: 'Named word lists, defined once and used by any rule as `{"list": name}` among lemmas.' },
    ).optional(),
    rules: doc(z.array(rule).min(1, { message: 'must have at least one rule' }).max(MAX_RULES), { description: `The rules (1 to ${MAX_RULES}).` }),
  })
  .superRefine((value, ctx) => {
    const seen = new Set<string>();
    value.rules.forEach((candidate, index) => {
      if (seen.has(candidate.name)) ctx.addIssue({ code: 'custom', path: ['rules', index, 'name'], message: 'another rule has this name already' });
      seen.add(candidate.name);
    });
    const lists = new Set(Object.keys(value.lists ?? {}));
    for (const { path, name } of listReferences(value.rules)) {
      if (!lists.has(name)) {
        const known = lists.size === 0 ? 'the rule set defines no lists' : `lists: ${[...lists].join(', ')}`;
        ctx.addIssue({ code: 'custom', path: [...path, 'list'], message: `names no list of the rule set (${known})` });
      }
    }
  });

/** A rule set as parsed. */
export type RelationRuleSet = z.output<typeof relationRulesSchema>;
/** One rule. */
export type RelationRule = RelationRuleSet['rules'][number];
/** One step of a rule's path. */
export type RelationRuleStep = RelationRule['path'][number];
/** Constraints on one token. */
export type TokenConstraint = NonNullable<RelationRuleStep['token']>;
/** A dependent a token must (or must not) have. */
export type DependentConstraint = NonNullable<TokenConstraint['dependents']>[number];
/** Lemmas as written in a rule: words, and references to named lists. */
export type RuleWords = NonNullable<TokenConstraint['lemma']>;

/**
 * The violations of a `rules` option value (the rule set as an object, or its JSON text), with JSON paths relative
 * to `base` (e.g. `components[3].options[0].value`); empty when the rule set is valid.
 */
export function relationRulesViolations(value: unknown, base = ''): FieldViolation[] {
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value) as unknown;
    } catch (error) {
      return [{ field: base, description: `the rules are not JSON: ${error instanceof Error ? error.message : String(error)}`, reason: 'WRONG_TYPE' }];
    }
  }
  const result = relationRulesSchema.safeParse(parsed);
  if (result.success) return [];
  return violationsOf(result.error.issues, base);
}

/** Parses a `rules` option value; a ValidationError names every violation by JSON path relative to `base`. */
export function parseRelationRules(value: unknown, base = ''): RelationRuleSet {
  const violations = relationRulesViolations(value, base);
  if (violations.length > 0) throw new ValidationError(violations);
  return relationRulesSchema.parse(typeof value === 'string' ? (JSON.parse(value) as unknown) : value);
}

/** JSON Schema (draft 2020-12) of the rule language, as published in schema/relation-rules.schema.json. */
export function relationRulesJsonSchema(): Record<string, unknown> {
  return publishJsonSchema(
    relationRulesSchema,
    'relation-rules.schema.json',
    'loom relation extraction rules',
    'The `rules` option of Rule Based Relation Extraction: relations between two named entities of one sentence, found by paths of Universal Dependencies.',
  );
}
