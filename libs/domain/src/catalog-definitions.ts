// A workflow carries a copy of each of its kinds' definitions (the specification's full form). The catalog decides what a
// kind is: a copy may leave fields empty (a caller that names the kind only), which the catalog fills, but a field it
// gives must agree with the catalog, or the workflow says something loom would not do (a source.Inlet of type SINK).

import { appendJsonPath, closestName, type FieldViolation } from '@loom/foundation';
import { componentCatalog, frozenComponentDefinition, frozenResourceDefinition, resourceCatalog } from './catalog.js';
import type { ComponentDefinition, ComponentInstance, ResourceDefinition, ResourceInstance, WorkflowConfiguration } from './workflow.js';

/** Prefixes of the catalog's qualified names, left out of the short names suggestions are made from. */
const KIND_PREFIXES = ['loom.components.', 'loom.resources.'];
/** Longest kind name an error text repeats; a longer one is cut (it is no kind anyway). */
const MAX_REPEATED_KIND = 80;

/** The fields of a component definition a copy may leave empty (filled from the catalog) but must not contradict. */
const COMPARED_COMPONENT_FIELDS = ['name', 'type', 'inputType', 'outputType', 'resource'] as const;

/**
 * The description of an unknown kind: `unknown component type 'sink.Loger': did you mean sink.Logger?`, or the kinds
 * known when none is close. `given` is repeated as written (cut when long); `known` are the names to suggest from.
 */
export function unknownKindDescription(what: 'component' | 'resource', given: string, known: readonly string[]): string {
  const shown = given.length > MAX_REPEATED_KIND ? `${given.slice(0, MAX_REPEATED_KIND)}...` : given;
  const suggestion = suggestKind(given, known);
  if (suggestion !== undefined) return `unknown ${what} type '${shown}': did you mean ${suggestion}?`;
  return `unknown ${what} type '${shown}'; one of ${known.join(', ')}`;
}

/** The known kind a mistyped one most likely meant, compared without the catalog's prefix, then by the part after the last dot. */
function suggestKind(given: string, known: readonly string[]): string | undefined {
  const short = (name: string): string => KIND_PREFIXES.reduce((rest, prefix) => (rest.startsWith(prefix) ? rest.slice(prefix.length) : rest), name);
  const byShort = new Map(known.map((name) => [short(name), name]));
  const close = closestName(short(given), byShort.keys());
  if (close !== undefined) return byShort.get(close);
  // `Loger` for `sink.Logger`: the kind's own name without its family
  const last = (name: string): string => name.slice(name.lastIndexOf('.') + 1);
  const byLast = new Map(known.map((name) => [last(name), name]));
  const closeLast = closestName(last(given), byLast.keys());
  return closeLast === undefined ? undefined : byLast.get(closeLast);
}

/** The qualified names of the catalog's component kinds (for suggestions). */
export function componentKindNames(): string[] {
  return componentCatalog().map((definition) => definition.qualifiedName);
}

/** The qualified names of the catalog's resource kinds (for suggestions). */
export function resourceKindNames(): string[] {
  return resourceCatalog().map((definition) => definition.qualifiedName);
}

/**
 * The violations of a component instance's copy of its definition against the catalog's: each of name, type, input
 * and output type and resource that is given (not empty) and differs. `path` is the instance's (`components[2]`).
 */
export function componentDefinitionViolations(instance: ComponentInstance, catalog: Readonly<ComponentDefinition>, path: string): FieldViolation[] {
  const given = instance.component;
  const definitionPath = appendJsonPath(path, 'component');
  return COMPARED_COMPONENT_FIELDS.flatMap((field): FieldViolation[] => {
    const value = given[field];
    if (value === '' || value === null || value === catalog[field]) return [];
    return [
      {
        field: appendJsonPath(definitionPath, field),
        description: `is '${String(value)}', but ${catalog.qualifiedName} has ${field} '${String(catalog[field])}' in the catalog; leave it empty or give the catalog's`,
        reason: 'DEFINITION_MISMATCH',
      },
    ];
  });
}

/** The violation of a resource instance's copy of its definition against the catalog's: a name that is given and differs. */
export function resourceDefinitionViolations(instance: ResourceInstance, catalog: Readonly<ResourceDefinition>, path: string): FieldViolation[] {
  const { name } = instance.resource;
  if (name === '' || name === catalog.name) return [];
  return [
    {
      field: appendJsonPath(appendJsonPath(path, 'resource'), 'name'),
      description: `is '${name}', but ${catalog.qualifiedName} is named '${catalog.name}' in the catalog; leave it empty or give the catalog's`,
      reason: 'DEFINITION_MISMATCH',
    },
  ];
}

/**
 * The workflow with every component's and resource's definition replaced by a copy of the catalog's, as it is stored
 * (the workflow is expected to be valid: validateWorkflow refused unknown kinds and contradicting copies). A kind the
 * catalog does not know keeps its copy.
 */
export function withCatalogDefinitions(workflow: WorkflowConfiguration): WorkflowConfiguration {
  const resource = (instance: ResourceInstance): ResourceInstance => {
    const catalog = frozenResourceDefinition(instance.resource.qualifiedName);
    return catalog === undefined ? instance : { ...instance, resource: structuredClone(catalog) };
  };
  return {
    ...workflow,
    components: workflow.components.map((instance) => {
      const catalog = frozenComponentDefinition(instance.component.qualifiedName);
      const component = catalog === undefined ? instance.component : (structuredClone(catalog) as ComponentDefinition);
      return { ...instance, component, ...(instance.resource == null ? {} : { resource: resource(instance.resource) }) };
    }),
    resources: workflow.resources.map(resource),
    workflowResources: workflow.workflowResources.map(resource),
  };
}
