import { randomUUID } from 'node:crypto';
import { ValidationError } from '@loom/foundation';

/** `<workflow_name>_<uuid>`: the name a workflow is stored, scheduled and run under. */
export interface StoredName {
  /** `<workflow_name>_<uuid>`. */
  readonly full: string;
  /** `<workflow_name>`. */
  readonly base: string;
  /** The uuid, lower case. */
  readonly uuid: string;
}

const UUID_SUFFIX = /_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
/** The longest stem: `.scheduler.json` (15 bytes) must still fit the usual 255-byte file name limit. */
const MAX_NAME_BYTES = 240;

/** Splits `<workflow_name>_<uuid>`; undefined when the name does not end in `_<uuid>` after a non-empty workflow name. */
export function parseStoredName(name: string): StoredName | undefined {
  const match = UUID_SUFFIX.exec(name);
  if (match === null || match.index === 0) return undefined;
  return { full: name, base: name.slice(0, match.index), uuid: (match[1] as string).toLowerCase() };
}

/** `<workflow_name>_<uuid>` from its parts. */
export function formatStoredName(base: string, uuid: string): StoredName {
  return { full: `${base}_${uuid}`, base, uuid: uuid.toLowerCase() };
}

/** A new stored name for a workflow pushed for the first time under its bare name. */
export function newStoredName(base: string): StoredName {
  return formatStoredName(base, randomUUID());
}

/** The workflow name of a stored name, or the name itself when it is not one. */
export function workflowBaseName(name: string): string {
  return parseStoredName(name)?.base ?? name;
}

/**
 * The stored name a request means among `known`: the name itself when it is one of them, else
 * the one whose workflow name is exactly `requested` (`etl` never means `etl_nightly_<uuid>`);
 * undefined when none. More than one is AMBIGUOUS_NAME on `field`, naming them.
 */
export function resolveStoredName(requested: string, known: Iterable<string>, field = 'name'): string | undefined {
  if (requested === '') throw ValidationError.of(field, 'is required', 'MISSING_FIELD');
  const names = [...known];
  if (names.includes(requested)) return requested;
  const matches = names.filter((name) => parseStoredName(name)?.base === requested);
  if (matches.length > 1) {
    throw ValidationError.of(
      field,
      `'${requested}' names ${matches.length} workflows (${matches.join(', ')}); give the stored name <workflow_name>_<uuid>`,
      'AMBIGUOUS_NAME',
    );
  }
  return matches[0];
}

/**
 * Refuses a name that could not be a file name in the storage directory, or could leave it: empty, a path separator,
 * `..`, NUL or another control character, a leading dot (hidden files and temp files), or too long.
 */
export function checkWorkflowName(name: string, field = 'name'): string {
  const problem = nameProblem(name);
  if (problem !== undefined) throw ValidationError.of(field, problem, 'INVALID_NAME');
  return name;
}

function nameProblem(name: string): string | undefined {
  if (name.trim() === '') return 'is required';
  if (name.includes('/') || name.includes('\\')) return 'must not contain a path separator (/ or \\)';
  if (name.includes('..')) return "must not contain '..'";
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'must not contain NUL or other control characters';
  if (name.startsWith('.')) return "must not start with '.'";
  if (name !== name.trim()) return 'must not start or end with white space';
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return `must be at most ${MAX_NAME_BYTES} bytes`;
  return undefined;
}
