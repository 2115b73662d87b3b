import { forEachSecretSlot, isSealed, secretReference } from './secret-values.js';
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

/** A sealed slot that was no `$$` reference when pushed: a value sealed at push, which a file must not repeat. */
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
 * reference named (a value sealed at push) becomes `$$<WORKFLOW>_<SLOT>`, listed in `unreferenced` so the caller can
 * say which variable each environment needs. `baseName` is the workflow name without its `_<uuid>`.
 */
export function withVariableReferences(stored: WorkflowConfiguration, references: VariableReferences, baseName: string): WorkflowWithReferences {
  const workflow = structuredClone(stored);
  const unreferenced: UnreferencedSecret[] = [];
  forEachSecretSlot(workflow, ({ path, value, set }) => {
    const variable = references[path];
    if (variable !== undefined) set(`$$${variable}`);
    else if (isSealed(value)) {
      const suggested = suggestedVariable(baseName, path);
      set(`$$${suggested}`);
      unreferenced.push({ path, variable: suggested });
    }
  });
  return { workflow, unreferenced };
}

/** `etl` and `resources[0].parameters.password` → `ETL_RESOURCES_0_PARAMETERS_PASSWORD` (a valid variable name). */
function suggestedVariable(baseName: string, path: string): string {
  const words = `${baseName}_${path}`
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
