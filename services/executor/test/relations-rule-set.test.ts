import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseRelationRules } from '@loom/domain';
import { type GraphStore } from '@loom/graph';
import { NlpPipeline } from '@loom/nlp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FoundRelation } from '../src/components/relations/rule-relations.js';
import { tokenGraphDocument } from '../src/components/relations/token-graph-document.js';
import { type GraphBackend, startGraphBackend } from './graph-backends.js';
import { pairOf, queriesOf, shippedRules, writeAndEvaluate } from './relations/rule-set.js';

// The shipped rule set (examples/relations/rules.json) on what loom's own NLP pipeline makes of each rule's example
// sentences, on the embedded graph: every rule finds exactly the pairs its examples list, and nothing in its near
// misses. All example sentences are one batch, one document each, so each rule runs once.

const root = mkdtempSync(join(tmpdir(), 'loom-relation-rules-'));
const nlp = new NlpPipeline();
const rules = shippedRules();
let backend: GraphBackend;
let store: GraphStore;

/** One document per distinct sentence, by sentence. */
const sentences = [...new Set(rules.rules.flatMap((rule) => [...(rule.examples?.finds ?? []).map((find) => find.text), ...(rule.examples?.misses ?? [])]))];
const documentOf = new Map(sentences.map((text, i) => [text, `example-${i}`]));
let found: readonly FoundRelation[] = [];

beforeAll(async () => {
  backend = await startGraphBackend('AGE', root);
  store = backend.store('rule_set');
  const documents = sentences.map((text) => tokenGraphDocument({ ...nlp.annotate(text), docId: documentOf.get(text)! }, 'annotation'));
  const evaluation = await writeAndEvaluate(store, documents, queriesOf(rules));
  expect(evaluation.failures).toEqual([]);
  found = evaluation.relations;
}, 180_000);

afterAll(async () => {
  await backend?.close();
  rmSync(root, { recursive: true, force: true });
});

/** The pairs one rule found in one sentence. */
function pairsIn(rule: string, text: string): string[] {
  return found
    .filter((relation) => relation.rule === rule && relation.document === documentOf.get(text))
    .map(pairOf)
    .sort();
}

describe("the shipped rule set, on loom's NLP of each rule's examples", () => {
  it('gives every rule a sentence it finds and a near miss', () => {
    const without = rules.rules.filter((rule) => (rule.examples?.finds ?? []).length === 0 || (rule.examples?.misses ?? []).length === 0);
    expect(without.map((rule) => rule.name)).toEqual([]);
  });

  it.each(rules.rules.map((rule) => [rule.name, rule] as const))('%s finds the pairs of its examples and nothing in its near misses', (name, rule) => {
    const expected = new Map<string, string[]>();
    for (const find of rule.examples?.finds ?? []) expected.set(find.text, [...(expected.get(find.text) ?? []), `${name}: ${find.subject} -> ${find.object}`]);
    for (const [text, pairs] of expected) expect(pairsIn(name, text), text).toEqual(pairs.sort());
    for (const text of rule.examples?.misses ?? []) expect(pairsIn(name, text), text).toEqual([]);
  });

  it('reports a proper noun NER missed as the span of its flat and compound proper nouns, typed PROPN', () => {
    const based = found.find((relation) => relation.rule === 'based-in' && relation.document === documentOf.get('Acme is based in Chicago.'));
    expect(based?.subject).toEqual({ text: 'Acme', type: 'PROPN', start: 0, end: 4 });
    expect(based?.object).toMatchObject({ text: 'Chicago', type: 'LOCATION' });
  });

  // The tagger of features version 1 made "lives" after a proper noun a NOUN (lemma "life"), so no rule with a verb
  // could reach Boston; the version-2 tagger (issue 37 Must 5) tags it VBZ, as "Grace Hopper still lives in Boston." was.
  it('finds LIVES_IN in "Grace Hopper lives in Boston."', async () => {
    const text = 'Grace Hopper lives in Boston.';
    const evaluation = await writeAndEvaluate(store, [tokenGraphDocument({ ...nlp.annotate(text), docId: 'grace-hopper' }, 'annotation')], queriesOf(rules));
    expect(evaluation.relations.map(pairOf)).toEqual(['lives-in: Grace Hopper -> Boston']);
  });
});

describe("the rule language on loom's NLP", () => {
  it('checks a dependent of a dependent ("out of") and lemmas a token must not have', async () => {
    const language = parseRelationRules({
      rules: [
        {
          name: 'works-in-city',
          relation: 'WORKS_IN',
          subject: { entity: ['PERSON'] },
          path: [
            {
              relation: 'nsubj',
              direction: 'up',
              // any verb but live or reside, whose oblique proper noun takes "in"
              token: {
                upos: ['VERB'],
                notLemma: ['live', 'reside'],
                dependents: [{ relation: 'obl', upos: ['PROPN'], dependents: [{ relation: 'case', lemma: ['in'] }] }],
              },
            },
            { relation: 'obl', direction: 'down' },
          ],
          object: { entity: ['LOCATION'] },
        },
      ],
    });
    const texts = ['Jane Doe works in Chicago.', 'Grace Hopper still lives in Boston.', 'Jane Doe flew from Chicago.'];
    const documents = texts.map((text, i) => tokenGraphDocument({ ...nlp.annotate(text), docId: `language-${i}` }, 'annotation'));
    const evaluation = await writeAndEvaluate(store, documents, queriesOf(language));
    expect(evaluation.relations.map(pairOf)).toEqual(['works-in-city: Jane Doe -> Chicago']);
  });

  it("takes PROPN among an end's entity types as a proper noun NER missed, reported as its span, and no entity of another type", async () => {
    const language = parseRelationRules({
      rules: [
        {
          name: 'works-for-named',
          relation: 'WORKS_FOR',
          subject: { entity: ['PERSON'] },
          path: [
            { relation: 'nsubj', direction: 'up', token: { lemma: ['work'] } },
            { relation: 'obl', direction: 'down' },
          ],
          object: { entity: ['ORGANIZATION', 'PROPN'] },
        },
      ],
    });
    const texts = ['Jane Doe works for Acme.', 'Jane Doe works for Microsoft.', 'Jane Doe works in Chicago.'];
    const documents = texts.map((text, i) => tokenGraphDocument({ ...nlp.annotate(text), docId: `propn-${i}` }, 'annotation'));
    const evaluation = await writeAndEvaluate(store, documents, queriesOf(language));
    expect(evaluation.relations.map((relation) => `${pairOf(relation)} (${relation.object.type})`)).toEqual([
      'works-for-named: Jane Doe -> Acme (PROPN)',
      'works-for-named: Jane Doe -> Microsoft (ORGANIZATION)',
    ]);
  });
});
