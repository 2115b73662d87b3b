import { appendJsonPath, findJsonSyntaxProblem, UnavailableError, ValidationError } from '@loom/foundation';
import { COMPONENT_KINDS } from './catalog.js';
import { NATS_SECRET_OPTIONS } from './nats-catalog.js';
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

/**
 * Component options whose whole value is a secret, by component kind: the webhook's HMAC `secret`, the NATS
 * connectors' token, credentials and TLS key. Each is a
 * sensitive slot, so a `$$VARIABLE` there is resolved and sealed at push and opened when the run starts.
 */
export const SECRET_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  [COMPONENT_KINDS.WEBHOOK]: ['secret'],
  [COMPONENT_KINDS.NATS_SUBSCRIBER]: NATS_SECRET_OPTIONS,
  [COMPONENT_KINDS.NATS_PUBLISHER]: NATS_SECRET_OPTIONS,
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

/** The header values a secret-bearing option holds, or why they cannot be read. */
export type SecretBearingOptionContent =
  { readonly ok: true; readonly values: Record<string, unknown>; readonly asText: boolean } | { readonly ok: false; readonly description: string };

/**
 * Reads a secret-bearing option (enricher `headers`): a JSON object of string values, or the JSON text of one;
 * null, absent or '' is no headers. Anything else cannot be sealed, so validation refuses it and sealing fails
 * closed. Descriptions never quote the value: it may hold a credential.
 */
export function readSecretBearingOption(value: unknown): SecretBearingOptionContent {
  if (value === null || value === undefined || value === '') return { ok: true, values: {}, asText: false };
  let parsed: unknown = value;
  const asText = typeof value === 'string';
  if (asText) {
    const problem = findJsonSyntaxProblem(value.startsWith('\uFEFF') ? value.slice(1) : value);
    if (problem !== undefined) {
      return {
        ok: false,
        description: `must be a JSON object of string values; its text is malformed at line ${problem.line}, column ${problem.column}: ${problem.description}`,
      };
    }
    parsed = JSON.parse(value.startsWith('\uFEFF') ? value.slice(1) : value) as unknown;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { ok: false, description: 'must be a JSON object of string values' };
  for (const [header, headerValue] of Object.entries(parsed)) {
    if (typeof headerValue !== 'string') return { ok: false, description: `header '${header}' must have a string value` };
  }
  return { ok: true, values: parsed as Record<string, unknown>, asText };
}

/**
 * Visits every value of a workflow that may hold a secret: each resource parameter (in
 * forEachResourceParameter's order), then per component its secret options (SECRET_OPTIONS) and
 * each header value of its secret-bearing options. `set` writes into the workflow it was given, also after the walk (a headers option kept as JSON text stays text).
 * A secret-bearing option that cannot be read is a ValidationError naming its JSON path
 * (`components[i].options[j].value`): a value nobody can find cannot be sealed, so it is never passed over.
 */
export function forEachSecretSlot(workflow: WorkflowConfiguration, visit: (slot: SecretSlot) => void): void {
  forEachResourceParameter(workflow, (path, resource, name, value) => {
    const sensitive = resource.resource.parameters.find((parameter) => parameter.name === name)?.type === 'PASSWORD';
    visit({ path, value, sensitive, set: (replacement) => (resource.parameters[name] = replacement) });
  });
  workflow.components.forEach((component, index) => {
    for (const option of component.options) {
      if (!(SECRET_OPTIONS[component.component.qualifiedName] ?? []).includes(option.name) || option.value == null) continue;
      const path = appendJsonPath(`components[${index}].options`, option.name);
      visit({ path, value: option.value, sensitive: true, set: (replacement) => (option.value = replacement) });
    }
    const names = SECRET_BEARING_OPTIONS[component.component.qualifiedName] ?? [];
    component.options.forEach((option, optionIndex) => {
      if (!names.includes(option.name)) return;
      const content = readSecretBearingOption(option.value);
      if (!content.ok)
        throw ValidationError.of(
          `components[${index}].options[${optionIndex}].value`,
          `option '${option.name}' ${content.description}`,
          'UNREADABLE_SECRET_OPTION',
        );
      const { values, asText } = content;
      const base = appendJsonPath(`components[${index}].options`, option.name);
      for (const [header, value] of Object.entries(values)) {
        visit({
          path: appendJsonPath(base, header),
          value,
          sensitive: CREDENTIAL_HEADER.test(header),
          // written through at once, so that a setter called after the walk still reaches an option kept as text
          set: (replacement) => {
            values[header] = replacement;
            option.value = asText ? JSON.stringify(values) : values;
          },
        });
      }
    });
  });
}

/** The options of a component instance that may hold secrets (see SECRET_BEARING_OPTIONS). */
export function secretBearingOptions<T extends { name: string }>(qualifiedName: string, options: readonly T[]): T[] {
  const names = SECRET_BEARING_OPTIONS[qualifiedName] ?? [];
  return options.filter((option) => names.includes(option.name));
}

/** A secret slot as SealConfiguration and DecryptResources exchange it (`loom.v1.SecretSlot`): path, text, sensitivity. */
export interface SecretSlotValue {
  readonly path: string;
  readonly value: string;
  readonly sensitive: boolean;
}

/** The string slots of a workflow a caller picked, and how to write the answers for them back. */
export interface CollectedSecretSlots {
  readonly slots: SecretSlotValue[];
  /**
   * Writes answered values into the workflow the slots came from, by path. The answer must hold the same slots in the
   * same order; anything else is an UnavailableError (a broken answer is never half applied).
   */
  apply(answer: readonly { readonly path: string; readonly value: string }[], service: string): void;
}

/**
 * Collects the string-valued secret slots of a workflow that `select` picks (forEachSecretSlot's order), so that only
 * those, never scripts or other options, go to the secrets service; `apply` writes its answer back by path.
 */
export function collectSecretSlots(workflow: WorkflowConfiguration, select: (slot: SecretSlotValue) => boolean): CollectedSecretSlots {
  const slots: SecretSlotValue[] = [];
  const setters: ((value: unknown) => void)[] = [];
  forEachSecretSlot(workflow, ({ path, value, sensitive, set }) => {
    if (typeof value !== 'string') return;
    const slot = { path, value, sensitive };
    if (!select(slot)) return;
    slots.push(slot);
    setters.push(set);
  });
  return {
    slots,
    apply(answer, service) {
      const mismatch = answer.length !== slots.length ? -1 : answer.findIndex((slot, index) => slot.path !== slots[index]?.path);
      if (answer.length !== slots.length || mismatch !== -1) {
        throw new UnavailableError(
          `the ${service} answered ${answer.length} secret slots for the ${slots.length} it was sent, or in another order; nothing was used`,
        );
      }
      answer.forEach((slot, index) => setters[index]?.(slot.value));
    },
  };
}

/** Whether a slot goes to SealConfiguration: a `$$<variable>`, a sealed value (it must open), or a sensitive value in clear. */
export function needsSealing(slot: SecretSlotValue): boolean {
  return secretReference(slot.value) !== undefined || isSealed(slot.value) || (slot.sensitive && slot.value !== '');
}
