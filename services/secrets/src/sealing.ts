import {
  type FieldViolation,
  forEachSecretSlot,
  isSealed,
  SEALED_PREFIX,
  secretReference,
  ValidationError,
  type WorkflowConfiguration,
} from '@loom/domain';
import { type KeyRing, SealedValueError } from './key-ring.js';
import { type VariableRow } from './variable-store.js';

/** Looks up the variables a workflow refers to, by name. */
export type VariableLookup = (names: readonly string[]) => Promise<Map<string, VariableRow>>;

/**
 * Seals a workflow: each `$$<variable>` value (a resource parameter, an enricher header) becomes the
 * variable's value (`###AES-…` for an encrypted one), and each plain sensitive value (a PASSWORD
 * parameter, a credential header) is encrypted, so no password is stored in clear. An unknown
 * variable or an undecryptable sealed value is a ValidationError naming the field; the input is
 * never changed.
 */
export async function sealWorkflow(workflow: WorkflowConfiguration, lookup: VariableLookup, keyRing: KeyRing): Promise<WorkflowConfiguration> {
  const sealed = structuredClone(workflow);
  const references = new Set<string>();
  forEachSecretSlot(sealed, ({ value }) => {
    const reference = secretReference(value);
    if (reference !== undefined) references.add(reference);
  });
  const variables = await lookup([...references]);
  const violations: FieldViolation[] = [];
  forEachSecretSlot(sealed, ({ path, value, sensitive, set }) => {
    const reference = secretReference(value);
    if (reference !== undefined) {
      const variable = variables.get(reference);
      if (variable === undefined) {
        violations.push({ field: path, description: `refers to unknown variable '${reference}'`, reason: 'UNKNOWN_VARIABLE' });
      } else if (variable.encrypted) {
        set(SEALED_PREFIX + variable.value);
      } else {
        set(sensitive ? SEALED_PREFIX + keyRing.encrypt(variable.value) : variable.value);
      }
      return;
    }
    if (isSealed(value)) {
      // A value sealed elsewhere must open here, or the workflow could never start.
      try {
        keyRing.decrypt((value as string).slice(SEALED_PREFIX.length));
      } catch (error) {
        if (!(error instanceof SealedValueError)) throw error;
        violations.push({ field: path, description: `sealed value cannot be opened: ${error.message}`, reason: 'BAD_SEALED_VALUE' });
      }
      return;
    }
    if (sensitive && typeof value === 'string' && value !== '') set(SEALED_PREFIX + keyRing.encrypt(value));
  });
  if (violations.length > 0) throw new ValidationError(violations);
  return sealed;
}

/**
 * Opens every sealed value of a workflow (resource parameters, enricher headers). The plain values go to `onPlainValue` (the log
 * redactor) before the workflow is returned; a value that cannot be opened fails the whole call
 * with a SealedValueError naming the parameter.
 */
export function openWorkflow(workflow: WorkflowConfiguration, keyRing: KeyRing, onPlainValue: (plain: string) => void): WorkflowConfiguration {
  const opened = structuredClone(workflow);
  forEachSecretSlot(opened, ({ path, value, set }) => {
    if (!isSealed(value)) return;
    let plain: string;
    try {
      plain = keyRing.decrypt((value as string).slice(SEALED_PREFIX.length));
    } catch (error) {
      if (error instanceof SealedValueError) throw new SealedValueError(`${path}: ${error.message}`, { cause: error });
      throw error;
    }
    onPlainValue(plain);
    set(plain);
  });
  return opened;
}
