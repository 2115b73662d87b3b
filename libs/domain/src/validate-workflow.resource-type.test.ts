import { describe, expect, it, vi } from 'vitest';
import { instance, neo4j, workflowOf } from '../test/catalog-workflows.js';
import { violationsThrownBy } from '../test/violations.js';
import type * as realCatalog from './catalog.js';
import { RESOURCE_KINDS } from './catalog.js';
import { validateWorkflow } from './validate-workflow.js';

// Every kind of today's catalog that needs a resource takes any graph database, and every other
// resource kind a workflow may hold is refused earlier (the SSO one), so WRONG_RESOURCE_TYPE
// cannot happen with the real catalog. This file adds one kind that needs an AGE database.
const AGE_ONLY = 'loom.components.test.AgeOnlyWriter';

vi.mock('./catalog.js', async (importOriginal) => {
  const catalog = await importOriginal<typeof realCatalog>();
  return {
    ...catalog,
    findComponentDefinition: (qualifiedName: string) => {
      if (qualifiedName !== AGE_ONLY) return catalog.findComponentDefinition(qualifiedName);
      const logger = catalog.findComponentDefinition(catalog.COMPONENT_KINDS.LOGGER);
      return logger && { ...logger, qualifiedName: AGE_ONLY, resource: catalog.RESOURCE_KINDS.AGE_DATABASE };
    },
    // validateWorkflow reads the catalog's own definitions
    frozenComponentDefinition: (qualifiedName: string) => {
      if (qualifiedName !== AGE_ONLY) return catalog.frozenComponentDefinition(qualifiedName);
      const logger = catalog.frozenComponentDefinition(catalog.COMPONENT_KINDS.LOGGER);
      return logger && { ...logger, qualifiedName: AGE_ONLY, resource: catalog.RESOURCE_KINDS.AGE_DATABASE };
    },
  };
});

describe('a component given a resource of a kind it cannot use', () => {
  it('is refused at the component resource', () => {
    const workflow = workflowOf([instance(AGE_ONLY, 'Writer', {}, { resource: neo4j() })]);
    const violations = violationsThrownBy(() => validateWorkflow(workflow));
    expect(violations.map(({ field, reason }) => [field, reason])).toStrictEqual([['components[0].resource', 'WRONG_RESOURCE_TYPE']]);
    expect(violations[0]?.description).toContain(RESOURCE_KINDS.AGE_DATABASE);
  });
});
