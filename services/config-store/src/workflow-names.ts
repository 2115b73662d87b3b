import { randomUUID } from 'node:crypto';
import { ValidationError } from '@loom/domain';

/** `<workflow_name>_<uuid>`: the stored name of a workflow and the stem of its three files. */
export interface StoredName {
  /** `<workflow_name>_<uuid>`. */
  readonly full: string;
  /** `<workflow_name>`. */
  readonly base: string;
  readonly uuid: string;
}

const UUID_SUFFIX = /_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
/** The longest stem: `.scheduler.json` (15 bytes) must still fit the usual 255-byte file name limit. */
const MAX_NAME_BYTES = 240;
const FILE_SUFFIXES = ['.workflow.json', '.scheduler.json', '.json'] as const;

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

/** Splits `<workflow_name>_<uuid>`; undefined when the name does not end in `_<uuid>`. */
export function parseStoredName(name: string): StoredName | undefined {
  const match = UUID_SUFFIX.exec(name);
  if (match === null || match.index === 0) return undefined;
  return { full: name, base: name.slice(0, match.index), uuid: (match[1] as string).toLowerCase() };
}

/** A new stored name for a workflow pushed for the first time under its bare name. */
export function newStoredName(base: string): StoredName {
  const uuid = randomUUID();
  return { full: `${base}_${uuid}`, base, uuid };
}

/** The stored name a file of the storage directory belongs to, and which of the three files it is. */
export function classifyFile(fileName: string): { stem: string; kind: 'workflow' | 'schedule' | 'metadata' } | undefined {
  if (fileName.startsWith('.')) return undefined;
  for (const suffix of FILE_SUFFIXES) {
    if (!fileName.endsWith(suffix) || fileName.length === suffix.length) continue;
    const stem = fileName.slice(0, -suffix.length);
    return { stem, kind: suffix === '.workflow.json' ? 'workflow' : suffix === '.scheduler.json' ? 'schedule' : 'metadata' };
  }
  return undefined;
}
