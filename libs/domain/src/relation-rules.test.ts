import { describe, expect, it } from 'vitest';
import { violationsThrownBy } from '../test/violations.js';
import { componentInstance, COMPONENT_KINDS, findResourceDefinition, RESOURCE_KINDS } from './catalog.js';
import { expandRulePaths } from './relation-rule-paths.js';
import { MAX_RULE_PATHS, parseRelationRules, relationRulesViolations } from './relation-rules.js';
import { validateWorkflow } from './validate-workflow.js';
import { type WorkflowConfiguration } from './workflow.js';

const rule = {
  name: 'works-for',
  relation: 'WORKS_FOR',
  subject: { entity: ['PERSON'] },
  path: [
    { relation: 'nsubj', direction: 'up', token: { lemma: ['work'], negated: false } },
    { relation: ['obl', 'obl:tmod'], direction: 'down' },
  ],
  object: { entity: ['ORGANIZATION'], token: { dependents: [{ relation: 'case', lemma: ['for'] }] } },
};

function workflowWith(rules: unknown, extra: Record<string, unknown> = {}): WorkflowConfiguration {
  const graph = findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE)!;
  const helper = { name: 'Helper', resource: graph, parameters: { host: 'embedded', user: 'postgres', graph: 'nlp_helper' } };
  const extraction = { ...componentInstance(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, 'Relations', { rules, ...extra }), resource: helper };
  // the extraction needs node_id, which a Token Occurrence Writer adds upstream of it
  const tokens = { ...componentInstance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, 'Tokens'), resource: helper };
  const components = [extraction, tokens, componentInstance(COMPONENT_KINDS.INLET, 'Articles')];
  const links = [
    { from: 'Articles', to: 'Tokens' },
    { from: 'Tokens', to: 'Relations' },
  ];
  return { name: 'w', autoStart: false, components, links, resources: [{ ...helper, name: 'Knowledge' }], skills: [], workflowResources: [] };
}

describe('the relation rule language', () => {
  it('accepts a rule set as an object or as its JSON text', () => {
    expect(parseRelationRules({ rules: [rule] }).rules[0]?.name).toBe('works-for');
    expect(parseRelationRules(JSON.stringify({ rules: [rule] })).rules).toHaveLength(1);
    expect(() => validateWorkflow(workflowWith({ rules: [rule] }, { target_resource: 'Knowledge' }))).not.toThrow();
  });

  it('refuses bad rules at push, naming each field by its JSON path inside the option value', () => {
    const bad = {
      rules: [
        { ...rule, path: [{ relation: 'NSUBJ', direction: 'sideways' }] },
        { ...rule, subject: { entity: [] }, colour: 'red' },
      ],
    };
    const fields = violationsThrownBy(() => validateWorkflow(workflowWith(bad))).map((violation) => violation.field);
    expect(fields.sort()).toEqual(
      [
        'components[0].options[0].value.rules[0].path[0].relation',
        'components[0].options[0].value.rules[0].path[0].direction',
        'components[0].options[0].value.rules[1].subject.entity',
        'components[0].options[0].value.rules[1].colour',
      ].sort(),
    );
    // checks across fields, once each rule is well formed
    const lastStep = { ...rule, path: [rule.path[0], { relation: 'obl', direction: 'down', token: { lemma: ['x'] } }] };
    const crossField = violationsThrownBy(() => validateWorkflow(workflowWith({ rules: [lastStep, rule] })));
    expect(crossField.map(({ field, description }) => [field, description])).toEqual([
      ['components[0].options[0].value.rules[0].path[1].token', 'the last step reaches the object token: put its constraints in object.token'],
      ['components[0].options[0].value.rules[1].name', 'another rule has this name already'],
    ]);
  });

  it('refuses rules that are not JSON, and a target that names no graph resource of the workflow', () => {
    expect(relationRulesViolations('{"rules": [', 'x')).toMatchObject([{ field: 'x', reason: 'WRONG_TYPE' }]);
    const violations = violationsThrownBy(() => validateWorkflow(workflowWith({ rules: [rule] }, { target_resource: 'Nowhere' })));
    expect(violations).toMatchObject([{ field: 'components[0].options[1].value', reason: 'UNKNOWN_RESOURCE' }]);
  });

  it('accepts optional and repeated steps, word lists, negative constraints, a dependent of a dependent and ends without a type', () => {
    const rules = parseRelationRules({
      lists: { titles: ['CEO', 'president'], former: ['former', 'ex'] },
      rules: [
        {
          name: 'title-of',
          relation: 'LEADS',
          subject: { entity: ['PERSON'] },
          path: [
            { relation: 'conj', direction: 'up', repeat: { min: 0, max: 2 } },
            {
              relation: ['nsubj', 'appos'],
              direction: 'up',
              token: { lemma: [{ list: 'titles' }, 'chairman'], noDependents: [{ relation: 'amod', lemma: [{ list: 'former' }] }] },
            },
            { relation: 'nmod', direction: 'down', optional: true },
            { relation: 'nmod', direction: 'down' },
          ],
          object: { token: { notLemma: ['board'], dependents: [{ relation: 'case', lemma: ['of'], dependents: [{ relation: 'fixed', lemma: ['out'] }] }] } },
        },
      ],
    });
    // 3 (0 to 2 conj) x 2 (nsubj or appos) x 2 (the optional nmod) paths
    expect(expandRulePaths(rules.rules[0]!.path).map((hops) => hops.map((hop) => hop.type).join(' '))).toEqual([
      'NSUBJ NMOD', 'NSUBJ NMOD NMOD', 'APPOS NMOD', 'APPOS NMOD NMOD',
      'CONJ NSUBJ NMOD', 'CONJ NSUBJ NMOD NMOD', 'CONJ APPOS NMOD', 'CONJ APPOS NMOD NMOD',
      'CONJ CONJ NSUBJ NMOD', 'CONJ CONJ NSUBJ NMOD NMOD', 'CONJ CONJ APPOS NMOD', 'CONJ CONJ APPOS NMOD NMOD',
    ]); // prettier-ignore
  });

  it('refuses a rule whose optional and repeated steps stand for too many paths, an unknown list and bad repeat bounds, naming the field', () => {
    const wide = { ...rule, path: [{ relation: ['conj', 'appos', 'flat'], direction: 'up', repeat: { min: 0, max: 4 } }, ...rule.path] };
    const unknownList = { ...rule, name: 'b', path: [{ relation: 'nsubj', direction: 'up', token: { lemma: [{ list: 'titles' }] } }, rule.path[1]] };
    const badRepeat = { ...rule, name: 'c', path: [{ relation: 'conj', direction: 'up', repeat: { min: 3, max: 2 } }, ...rule.path] };
    const tooLong = { ...rule, name: 'd', path: [{ relation: 'conj', direction: 'up', repeat: { max: 5 } }, ...rule.path] };
    const violations = relationRulesViolations({ lists: { former: ['former'] }, rules: [wide, unknownList, badRepeat, tooLong] }, 'rules');
    expect(violations.map(({ field, description }) => [field, description])).toEqual([
      [
        'rules.rules[0].path',
        `stands for 121 fixed paths of up to 6 hops once optional and repeated steps and steps over relations of different kinds are spelled out; at most ${MAX_RULE_PATHS} paths of 8 hops keep a rule's cost bounded: split the rule`,
      ],
      ['rules.rules[2].path[0].repeat.min', 'min must not be above max'],
      ['rules.rules[3].path[0].repeat.max', 'Too big: expected number to be <=4'],
      ['rules.rules[1].path[0].token.lemma[0].list', 'names no list of the rule set (lists: former)'],
    ]);
  });
});
