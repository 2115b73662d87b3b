import { describe, expect, it } from 'vitest';
import { fedByInlet, instance, neo4j } from '../test/catalog-workflows.js';
import { violationsThrownBy } from '../test/violations.js';
import { COMPONENT_KINDS, frozenComponentDefinition, RESOURCE_KINDS } from './catalog.js';
import { validateWorkflow } from './validate-workflow.js';

// Every kind of today's catalog that needs a resource takes any graph database, and every other
// resource kind a workflow may hold is refused earlier (the SSO one), so WRONG_RESOURCE_TYPE
// cannot happen with the real catalog. This file validates against the catalog plus one kind
// that needs an AGE database.
const AGE_ONLY = 'loom.components.test.AgeOnlyWriter';

function withAgeOnlyWriter(qualifiedName: string): ReturnType<typeof frozenComponentDefinition> {
  if (qualifiedName !== AGE_ONLY) return frozenComponentDefinition(qualifiedName);
  const logger = frozenComponentDefinition(COMPONENT_KINDS.LOGGER);
  return logger && { ...logger, qualifiedName: AGE_ONLY, resource: RESOURCE_KINDS.AGE_DATABASE };
}

describe('a component given a resource of a kind it cannot use', () => {
  it('is refused at the component resource', () => {
    const writer = instance(COMPONENT_KINDS.LOGGER, 'Writer', {}, { resource: neo4j() });
    const workflow = fedByInlet([{ ...writer, component: { ...writer.component, qualifiedName: AGE_ONLY, resource: RESOURCE_KINDS.AGE_DATABASE } }]);
    const violations = violationsThrownBy(() => validateWorkflow(workflow, { componentDefinition: withAgeOnlyWriter }));
    expect(violations.map(({ field, reason }) => [field, reason])).toStrictEqual([['components[0].resource', 'WRONG_RESOURCE_TYPE']]);
    expect(violations[0]?.description).toContain(RESOURCE_KINDS.AGE_DATABASE);
  });
});
