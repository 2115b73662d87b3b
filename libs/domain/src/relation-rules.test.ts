import { describe, expect, it } from 'vitest';
import { violationsThrownBy } from '../test/violations.js';
import { componentInstance, COMPONENT_KINDS, findResourceDefinition, RESOURCE_KINDS } from './catalog.js';
import { parseRelationRules, relationRulesViolations } from './relation-rules.js';
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
});
