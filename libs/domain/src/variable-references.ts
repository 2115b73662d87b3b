import { forEachResourceParameter, forEachSecretSlot, isSealed, secretReference } from './secret-values.js';
import type { WorkflowConfiguration } from './workflow.js';

/** Secret slots that were `$$<variable>` references when a workflow was pushed: JSON path of the slot to variable name. */
export type VariableReferences = Readonly<Record<string, string>>;

/** The `$$<variable>` references of a workflow as pushed (before sealing resolves them), by slot path. */
export function variableReferencesOf(workflow: WorkflowConfiguration): VariableReferences {
  const references: Record<string, string> = {};
  forEachSecretSlot(workflow, ({ path, value }) => {
    const variable = secretReference(value);
    if (variable !== undefined) references[path] = variable;
  });
  return references;
}

/** A sealed value that was no `$$` reference when pushed (a value sealed at push, which a file must not repeat): its first slot. */
export interface UnreferencedSecret {
  readonly path: string;
  /** The variable the slot is written as instead (`<WORKFLOW>_<SLOT>`, upper case). */
  readonly variable: string;
}

/** A copy of a stored workflow in which no secret value remains, and the sealed slots no reference named. */
export interface WorkflowWithReferences {
  readonly workflow: WorkflowConfiguration;
  readonly unreferenced: UnreferencedSecret[];
}

/**
 * A copy of a stored (sealed) workflow with its `$$<variable>` references written back where they were pushed, so
 * that a file of it holds no secret value: each referenced slot becomes `$$<variable>` again, and a sealed slot no
 * reference named (a value sealed at push) becomes `$$<WORKFLOW>_<RESOURCE>_<PARAMETER>` (or the slot's path outside
 * a resource), listed once in `unreferenced` so the caller can say which variable each environment needs. `baseName`
 * is the workflow name without its `_<uuid>`.
 */
export function withVariableReferences(stored: WorkflowConfiguration, references: VariableReferences, baseName: string): WorkflowWithReferences {
  const workflow = structuredClone(stored);
  const unreferenced: UnreferencedSecret[] = [];
  // a resource parameter is named after its resource, so a resource and its copy in a component read the same variable
  const resourceSlots = new Map<string, string>();
  forEachResourceParameter(workflow, (path, resource, name) => resourceSlots.set(path, `${plainName(resource.name)}_${name}`));
  const written = new Set<string>();
  forEachSecretSlot(workflow, ({ path, value, set }) => {
    const variable = references[path];
    if (variable !== undefined) set(`$$${variable}`);
    else if (isSealed(value)) {
      const suggested = suggestedVariable(baseName, resourceSlots.get(path) ?? path);
      set(`$$${suggested}`);
      if (!written.has(suggested)) unreferenced.push({ path, variable: suggested });
      written.add(suggested);
    }
  });
  return { workflow, unreferenced };
}

/** An instance name without its `_<uuid>`. */
function plainName(name: string): string {
  return name.replace(/_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, '');
}

/** `etl` and `Knowledge graph_password` → `ETL_KNOWLEDGE_GRAPH_PASSWORD` (a valid variable name). */
function suggestedVariable(baseName: string, slot: string): string {
  const words = `${baseName}_${slot}`
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return /^[A-Z_]/.test(words) ? words : `_${words}`;
}

/**
 * A copy of a stored workflow with only its `$$<variable>` references written back, every other value (sealed ones
 * too) as stored: what a rollback seals again, so the variables' current values are used as on a push.
 */
export function restoreVariableReferences(stored: WorkflowConfiguration, references: VariableReferences): WorkflowConfiguration {
  const workflow = structuredClone(stored);
  forEachSecretSlot(workflow, ({ path, set }) => {
    const variable = references[path];
    if (variable !== undefined) set(`$$${variable}`);
  });
  return workflow;
}

/** The text shown for a secret value in a diff or a plan. */
export const REDACTED_SECRET = '(secret)';

/**
 * A copy of a workflow fit to show: each secret slot holding a value (sealed, or a sensitive value in clear) reads
 * REDACTED_SECRET; `$$<variable>` references stay.
 */
export function redactSecretValues(workflow: WorkflowConfiguration): WorkflowConfiguration {
  const copy = structuredClone(workflow);
  forEachSecretSlot(copy, ({ value, sensitive, set }) => {
    if (typeof value !== 'string' || secretReference(value) !== undefined) return;
    if (isSealed(value) || (sensitive && value !== '')) set(REDACTED_SECRET);
  });
  return copy;
}
