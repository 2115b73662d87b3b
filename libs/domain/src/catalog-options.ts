// The building blocks of the catalog's option lists (catalog.ts and the kinds kept in files of their own).

import type { OptionDefinition, OptionTypeName } from './workflow.js';

/** What a value must be beyond its type: one of some strings, a string of a minimum length, or of a pattern. */
export interface ValueConstraint {
  readonly allowedValues?: readonly string[];
  readonly minLength?: number;
  /** A string this pattern matches; `description` says what that is, for the error. */
  readonly pattern?: { readonly regex: RegExp; readonly description: string };
}

/** An option of the catalog with what its value must be beyond its type. */
export type OptionSpec = OptionDefinition & ValueConstraint;

/** An option definition (never overridable) with its constraint. */
export function option(
  group: string,
  name: string,
  type: OptionTypeName,
  label: string,
  required: boolean,
  defaultValue: unknown,
  constraint: ValueConstraint = {},
): OptionSpec {
  return { group, name, type, label, required, defaultValue, overridable: false, ...constraint };
}

/** The failure-handling options every kind that takes messages has, in the writer's order. */
export function failureHandlingOptions(): OptionSpec[] {
  return [
    option('Advanced', 'max_retry', 'INTEGER', 'Retries of transient errors', false, 0),
    option('Advanced', 'delay', 'INTEGER', 'Delay between retries (ms)', false, 0),
    option('Main', 'store_error_content', 'BOOLEAN', 'Store error content', true, true),
    option('Main', 'store_message_content', 'BOOLEAN', 'Store message content', true, true),
    option('Failure Handling', 'failure_handler', 'COMPONENT_SELECTION_FAILURE_HANDLER', 'Failure handler', false, null),
  ];
}

/**
 * How many batches of messages one instance works on at once (loom's own option; the graph
 * writers, whose options follow the specification exactly, batch instead).
 */
export function concurrencyOption(): OptionSpec {
  return option('Advanced', 'concurrency', 'INTEGER', 'Messages worked on at once', false, 1);
}

/** The constraint with only the parts given, or undefined when none is. */
export function constraintOf(parts: { [K in keyof ValueConstraint]: ValueConstraint[K] | undefined }): ValueConstraint | undefined {
  const given = Object.fromEntries(Object.entries(parts).filter(([, value]) => value !== undefined)) as ValueConstraint;
  return Object.keys(given).length === 0 ? undefined : given;
}

/** Freezes a value and everything in it (a Map through its values). */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    // Maps are frozen as objects only; their entries are frozen through their values
    if (value instanceof Map) for (const entry of value.values()) deepFreeze(entry);
    else for (const nested of Object.values(value)) deepFreeze(nested);
    Object.freeze(value);
  }
  return value;
}
