import { appendJsonPath } from './json-path.js';
import type { ResourceInstance, WorkflowConfiguration } from './workflow.js';

/** Prefix of a sealed (encrypted) resource parameter value: `###AES-<encrypted value>`. */
export const SEALED_PREFIX = '###AES-';

const VARIABLE_NAME_SOURCE = '[A-Za-z_][A-Za-z0-9_.-]*';

/** What an ecosystem variable's name looks like, so that `$$<name>` can refer to it. */
export const VARIABLE_NAME = new RegExp(`^${VARIABLE_NAME_SOURCE}$`);

const SECRET_REFERENCE = new RegExp(`^\\$\\$(${VARIABLE_NAME_SOURCE})$`);

/** The ecosystem variable a value refers to (`$$NEO4J_PASSWORD` → `NEO4J_PASSWORD`), else undefined. */
export function secretReference(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  return SECRET_REFERENCE.exec(value)?.[1];
}

/** Whether a value is sealed: a string starting with `###AES-`. */
export function isSealed(value: unknown): boolean {
  return typeof value === 'string' && value.startsWith(SEALED_PREFIX);
}

/** Visitor of one resource parameter; `path` is its JSON path, e.g. `resources[0].parameters.password`. */
export type ResourceParameterVisitor = (path: string, resource: ResourceInstance, name: string, value: unknown) => void;

/**
 * Visits every parameter of every resource instance of a workflow: `resources[i]`, then
 * `workflowResources[i]`, then `components[i].resource`, each parameter in its own order.
 */
export function forEachResourceParameter(workflow: WorkflowConfiguration, visit: ResourceParameterVisitor): void {
  const visitResource = (path: string, resource: ResourceInstance): void => {
    const parameters = appendJsonPath(path, 'parameters');
    for (const [name, value] of Object.entries(resource.parameters)) visit(appendJsonPath(parameters, name), resource, name, value);
  };
  workflow.resources.forEach((resource, i) => visitResource(`resources[${i}]`, resource));
  workflow.workflowResources.forEach((resource, i) => visitResource(`workflowResources[${i}]`, resource));
  workflow.components.forEach((component, i) => {
    if (component.resource != null) visitResource(`components[${i}].resource`, component.resource);
  });
}
