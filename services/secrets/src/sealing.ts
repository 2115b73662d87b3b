import { type FieldViolation, isSealed, SEALED_PREFIX, secretReference, type SecretSlotValue, ValidationError } from '@loom/domain';
import { type KeyRing, SealedValueError } from './key-ring.js';
import { type VariableRow } from './variable-store.js';

/** Looks up the variables a workflow refers to, by name. */
export type VariableLookup = (names: readonly string[]) => Promise<Map<string, VariableRow>>;

/** Most slots one SealConfiguration or DecryptResources call takes. */
export const MAX_SLOTS = 10_000;

/** Checks the slots of a request: each needs a path, and there are at most MAX_SLOTS. */
export function checkSlots(slots: readonly SecretSlotValue[]): void {
  if (slots.length > MAX_SLOTS) throw ValidationError.of('slots', `at most ${MAX_SLOTS} slots per call`, 'TOO_MANY');
  const violations = slots.flatMap((slot, index) =>
    slot.path === '' ? [{ field: `slots[${index}].path`, description: 'is required', reason: 'MISSING_FIELD' }] : [],
  );
  if (violations.length > 0) throw new ValidationError(violations);
}

/**
 * Seals secret slots: a `$$<variable>` becomes the variable's value (`###AES-…` for an encrypted one, and for a plain
 * one in a sensitive slot), a sensitive value in clear is encrypted, and a sealed value must open and comes back under
 * the active key (so a re-seal after a key rotation leaves nothing under the old key). An unknown variable or a sealed
 * value that does not open is a ValidationError naming the slot's path. Answers the slots in the same order.
 */
export async function sealSlots(slots: readonly SecretSlotValue[], lookup: VariableLookup, keyRing: KeyRing): Promise<SecretSlotValue[]> {
  const references = new Set(slots.flatMap((slot) => secretReference(slot.value) ?? []));
  const variables = await lookup([...references]);
  const violations: FieldViolation[] = [];
  const sealed = slots.map((slot): SecretSlotValue => {
    const { path, value, sensitive } = slot;
    const reference = secretReference(value);
    if (reference !== undefined) {
      const variable = variables.get(reference);
      if (variable === undefined) {
        violations.push({ field: path, description: `refers to unknown variable '${reference}'`, reason: 'UNKNOWN_VARIABLE' });
        return slot;
      }
      if (variable.encrypted) return { path, sensitive, value: SEALED_PREFIX + variable.value };
      return { path, sensitive, value: sensitive ? SEALED_PREFIX + keyRing.encrypt(variable.value) : variable.value };
    }
    if (isSealed(value)) {
      // A value sealed elsewhere must open here, or the workflow could never start.
      const text = value.slice(SEALED_PREFIX.length);
      try {
        const plain = keyRing.decrypt(text);
        return keyRing.keyIdOf(text) === keyRing.activeKeyId ? slot : { path, sensitive, value: SEALED_PREFIX + keyRing.encrypt(plain) };
      } catch (error) {
        if (!(error instanceof SealedValueError)) throw error;
        violations.push({ field: path, description: `sealed value cannot be opened: ${error.message}`, reason: 'BAD_SEALED_VALUE' });
        return slot;
      }
    }
    if (sensitive && value !== '') return { path, sensitive, value: SEALED_PREFIX + keyRing.encrypt(value) };
    return slot;
  });
  if (violations.length > 0) throw new ValidationError(violations);
  return sealed;
}

/**
 * Opens sealed slots. The plain values go to `onPlainValue` (the log redactor) before they are returned; a slot that is
 * not sealed is answered as it is, and a value that cannot be opened fails the whole call with a SealedValueError
 * naming the slot's path.
 */
export function openSlots(slots: readonly SecretSlotValue[], keyRing: KeyRing, onPlainValue: (plain: string) => void): SecretSlotValue[] {
  return slots.map((slot) => {
    if (!isSealed(slot.value)) return slot;
    let plain: string;
    try {
      plain = keyRing.decrypt(slot.value.slice(SEALED_PREFIX.length));
    } catch (error) {
      if (error instanceof SealedValueError) throw new SealedValueError(`${slot.path}: ${error.message}`, { cause: error });
      throw error;
    }
    onPlainValue(plain);
    return { ...slot, value: plain };
  });
}
