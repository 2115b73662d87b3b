import { describe, expect, it } from 'vitest';
import { articleImport } from '../test/catalog-workflows.js';
import { violationsThrownBy } from '../test/violations.js';
import { withCatalogDefinitions } from './catalog-definitions.js';
import { COMPONENT_KINDS, componentInstance, findComponentDefinition, findResourceDefinition } from './catalog.js';
import { validateWorkflow } from './validate-workflow.js';
import type { ComponentDefinition, WorkflowConfiguration } from './workflow.js';

/** An inlet and a logger linked, each definition as `definition` makes it from the catalog's. */
function inletToLogger(definition: (catalog: ComponentDefinition) => ComponentDefinition): WorkflowConfiguration {
  const components = [componentInstance(COMPONENT_KINDS.INLET, 'In'), componentInstance(COMPONENT_KINDS.LOGGER, 'Out')];
  for (const instance of components) instance.component = definition(instance.component);
  return { name: 'defs', autoStart: false, components, links: [{ from: 'In', to: 'Out' }], resources: [], skills: [], workflowResources: [] };
}

/** A definition that names its kind and its type only, as a caller writing the full form by hand sends it. */
const hollow = (catalog: ComponentDefinition): ComponentDefinition => ({
  ...catalog,
  name: '',
  inputType: '',
  outputType: '',
  options: [],
  resource: null,
  capabilityQualifiedName: null,
  experimental: null,
});

describe('component definitions against the catalog', () => {
  it('accepts a hollow copy and fills it with the catalog definition', () => {
    const workflow = inletToLogger(hollow);
    expect(() => validateWorkflow(workflow)).not.toThrow();
    const filled = withCatalogDefinitions(workflow);
    expect(filled.components.map((instance) => instance.component)).toEqual([
      findComponentDefinition(COMPONENT_KINDS.INLET),
      findComponentDefinition(COMPONENT_KINDS.LOGGER),
    ]);
    expect(workflow.components[0]?.component.options).toEqual([]); // the workflow given is left as it was
  });

  it('refuses a copy that contradicts the catalog, naming each field and both values', () => {
    const workflow = inletToLogger((catalog) =>
      catalog.qualifiedName === COMPONENT_KINDS.INLET ? { ...catalog, type: 'SINK', outputType: 'Bytes' } : catalog,
    );
    expect(violationsThrownBy(() => validateWorkflow(workflow))).toEqual([
      {
        field: 'components[0].component.type',
        description: `is 'SINK', but ${COMPONENT_KINDS.INLET} has type 'SOURCE' in the catalog; leave it empty or give the catalog's`,
        reason: 'DEFINITION_MISMATCH',
      },
      expect.objectContaining({ field: 'components[0].component.outputType', reason: 'DEFINITION_MISMATCH' }),
    ]);
  });

  it('names an unknown kind with the closest known one', () => {
    const workflow = inletToLogger((catalog) =>
      catalog.qualifiedName === COMPONENT_KINDS.LOGGER ? { ...catalog, qualifiedName: 'loom.components.sink.Loger' } : catalog,
    );
    expect(violationsThrownBy(() => validateWorkflow(workflow))).toContainEqual({
      field: 'components[1].component.qualifiedName',
      description: "unknown component type 'loom.components.sink.Loger': did you mean loom.components.sink.Logger?",
      reason: 'UNKNOWN_COMPONENT',
    });
  });

  it('fills resource definitions too, and refuses a resource named otherwise than the catalog names it', () => {
    const workflow = articleImport();
    const [resource] = workflow.resources;
    if (resource === undefined) throw new Error('the article import has a resource');
    const catalog = findResourceDefinition(resource.resource.qualifiedName);
    resource.resource = { ...resource.resource, name: '', parameters: [], group: '' };
    expect(() => validateWorkflow(workflow)).not.toThrow();
    expect(withCatalogDefinitions(workflow).resources[0]?.resource).toEqual(catalog);
    resource.resource.name = 'Some database';
    expect(violationsThrownBy(() => validateWorkflow(workflow)).map((violation) => [violation.field, violation.reason])).toEqual([
      ['resources[0].resource.name', 'DEFINITION_MISMATCH'],
    ]);
  });
});
