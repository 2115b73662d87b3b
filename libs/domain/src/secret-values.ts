import { COMPONENT_KINDS } from './catalog.js';
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

/**
 * Component options whose values may hold secrets, by component kind: the HTTP enricher's
 * `headers` (a JSON object of header values, or its JSON text).
 */
export const SECRET_BEARING_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  [COMPONENT_KINDS.HTTP_ENRICHER]: ['headers'],
};

/** Header names whose values are credentials: sealed even when written in clear. */
const CREDENTIAL_HEADER = /authorization|cookie|token|secret|password|passwd|api[-_]?key|auth/i;

/** One value of a workflow that may hold a secret, and how to replace it. */
export interface SecretSlot {
  /** Its JSON path, e.g. `resources[0].parameters.password` or `components[2].options.headers.authorization`. */
  readonly path: string;
  readonly value: unknown;
  /** Sealed even when written in clear: a PASSWORD parameter, a credential header. */
  readonly sensitive: boolean;
  readonly set: (value: unknown) => void;
}

/**
 * Visits every value of a workflow that may hold a secret: each resource parameter (in
 * forEachResourceParameter's order), then each header value of the secret-bearing component
 * options. `set` writes into the workflow it was given (a headers option kept as JSON text stays text).
 */
export function forEachSecretSlot(workflow: WorkflowConfiguration, visit: (slot: SecretSlot) => void): void {
  forEachResourceParameter(workflow, (path, resource, name, value) => {
    const sensitive = resource.resource.parameters.find((parameter) => parameter.name === name)?.type === 'PASSWORD';
    visit({ path, value, sensitive, set: (replacement) => (resource.parameters[name] = replacement) });
  });
  workflow.components.forEach((component, index) => {
    const names = SECRET_BEARING_OPTIONS[component.component.qualifiedName] ?? [];
    for (const option of component.options) {
      if (!names.includes(option.name)) continue;
      const asText = typeof option.value === 'string';
      let headers: unknown = option.value;
      if (asText) {
        try {
          headers = JSON.parse(option.value as string) as unknown;
        } catch {
          continue; // not JSON: the component refuses it at start, naming the option
        }
      }
      if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) continue;
      const values = headers as Record<string, unknown>;
      const base = appendJsonPath(`components[${index}].options`, option.name);
      let changed = false;
      for (const [header, value] of Object.entries(values)) {
        visit({
          path: appendJsonPath(base, header),
          value,
          sensitive: CREDENTIAL_HEADER.test(header),
          set: (replacement) => {
            values[header] = replacement;
            changed = true;
          },
        });
      }
      if (changed && asText) option.value = JSON.stringify(values);
    }
  });
}

/** The options of a component instance that may hold secrets (see SECRET_BEARING_OPTIONS). */
export function secretBearingOptions<T extends { name: string }>(qualifiedName: string, options: readonly T[]): T[] {
  const names = SECRET_BEARING_OPTIONS[qualifiedName] ?? [];
  return options.filter((option) => names.includes(option.name));
}
