import { type z } from 'zod';
import { appendJsonPath, type FieldViolation, formatJsonPath, ValidationError } from '@loom/foundation';

/**
 * Validates a value with a zod schema; a mismatch is a ValidationError listing every violation,
 * named by JSON path below `base` (the value's own path, e.g. `body._annotation`).
 * A `__proto__` key anywhere is a violation too.
 */
export function parseWithSchema<S extends z.ZodType>(schema: S, value: unknown, base = ''): z.output<S> {
  const result = schema.safeParse(value, { reportInput: true });
  const violations = result.success ? [] : violationsOf(result.error.issues, base);
  for (const reserved of reservedKeyViolations(value, base)) {
    if (!violations.some((violation) => violation.field === reserved.field)) violations.push(reserved);
  }
  if (violations.length > 0 || !result.success) throw new ValidationError(violations);
  return result.data;
}

// Deeper than any valid document; the schema reports values nested this deep, so the search
// stops here rather than exhaust the stack on hostile input.
const SEARCH_DEPTH = 64;

// JSON.parse keeps `__proto__` as an ordinary key, but zod (rightly) never copies it into its
// output, where assigning it would set the prototype: the value would vanish silently.
// One walk with a mutable path and ancestor set: this runs on every workflow that crosses the wire.
function reservedKeyViolations(value: unknown, base: string): FieldViolation[] {
  const found: FieldViolation[] = [];
  const path: PropertyKey[] = [];
  const ancestors = new Set<object>();
  const visit = (item: unknown): void => {
    if (typeof item !== 'object' || item === null || ancestors.has(item) || ancestors.size > SEARCH_DEPTH) return;
    ancestors.add(item);
    if (Array.isArray(item)) {
      for (let index = 0; index < item.length; index++) {
        path.push(index);
        visit(item[index]);
        path.pop();
      }
    } else {
      for (const key of Object.keys(item)) {
        path.push(key);
        if (key === '__proto__') found.push({ field: formatJsonPath(path, base), description: `'__proto__' is not allowed as a key`, reason: 'RESERVED_KEY' });
        else visit((item as Record<string, unknown>)[key]);
        path.pop();
      }
    }
    ancestors.delete(item);
  };
  visit(value);
  return found;
}

/** One violation per zod issue, named by JSON path below `base`; an unknown-keys issue gives one per key. */
export function violationsOf(issues: readonly z.core.$ZodIssue[], base = ''): FieldViolation[] {
  return issues.flatMap((issue) => {
    const field = formatJsonPath(issue.path, base);
    switch (issue.code) {
      case 'invalid_type':
        // values are never quoted in a description: a wrong field may hold a password
        return issue.input === undefined || issue.expected === 'nonoptional'
          ? [{ field, description: 'required field is missing', reason: 'MISSING_FIELD' }]
          : [{ field, description: `expected ${expectedName(issue.expected)}, got ${kindOf(issue.input)}`, reason: 'WRONG_TYPE' }];
      case 'unrecognized_keys':
        return issue.keys.map((key) => ({ field: appendJsonPath(field, key), description: 'unknown field', reason: 'UNKNOWN_FIELD' }));
      case 'invalid_value':
        return [{ field, description: `must be one of ${issue.values.map(String).join(', ')}`, reason: 'INVALID_VALUE' }];
      case 'too_small':
        return [{ field, description: issue.origin === 'string' ? 'must not be empty' : issue.message, reason: 'INVALID_VALUE' }];
      case 'custom': {
        const reason: unknown = issue.params?.['reason'];
        return [{ field, description: issue.message, reason: typeof reason === 'string' ? reason : 'INVALID_VALUE' }];
      }
      default:
        return [{ field, description: issue.message, reason: 'INVALID_VALUE' }];
    }
  });
}

function expectedName(expected: string): string {
  switch (expected) {
    case 'int':
      return 'an integer';
    case 'array':
      return 'an array';
    case 'object':
    case 'record':
      return 'an object';
    case 'null':
    case 'undefined':
      return expected;
    default:
      return `a ${expected}`;
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'number' && Number.isInteger(value)) return 'an integer';
  return `a ${typeof value}`;
}
