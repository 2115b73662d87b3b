import { isDeepStrictEqual } from 'node:util';
import { type WorkflowTestMatcher } from '@loom/domain';

/** How long a value is shown in a mismatch before it is cut. */
const SHOWN_CHARS = 200;

/** A value as a mismatch shows it: JSON, cut past SHOWN_CHARS. */
export function shown(value: unknown): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text;
}

/** Where a subset differs from a value: each path and what was expected there against what was found. */
function subsetDifferences(expected: unknown, actual: unknown, path: string, found: string[]): void {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) {
      found.push(`${path || 'body'}: expected ${shown(expected)}, got ${shown(actual)}`);
      return;
    }
    expected.forEach((item, index) => subsetDifferences(item, actual[index], `${path}[${index}]`, found));
    return;
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) {
      found.push(`${path || 'body'}: expected an object with ${shown(expected)}, got ${shown(actual)}`);
      return;
    }
    for (const [key, value] of Object.entries(expected)) {
      subsetDifferences(value, (actual as Record<string, unknown>)[key], path === '' ? key : `${path}.${key}`, found);
    }
    return;
  }
  if (!isDeepStrictEqual(expected, actual)) found.push(`${path || 'body'}: expected ${shown(expected)}, got ${shown(actual)}`);
}

/** The value at a dotted path (`_keywords.0.value`); undefined when a step is missing. */
function valueAt(body: unknown, path: string): unknown {
  let value: unknown = body;
  for (const step of path.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, step)) return undefined;
    value = (value as Record<string, unknown>)[step];
  }
  return value;
}

/** What in `body` does not hold of `matcher` (exact, subset, regex; all that are given); empty when it matches. */
export function mismatches(matcher: WorkflowTestMatcher, body: Record<string, unknown>): string[] {
  const found: string[] = [];
  if (matcher.exact !== undefined && !isDeepStrictEqual(matcher.exact, body)) {
    const differences: string[] = [];
    subsetDifferences(matcher.exact, body, '', differences);
    const extra = Object.keys(body).filter((key) => !Object.hasOwn(matcher.exact as object, key));
    if (extra.length > 0) differences.push(`fields not expected: ${extra.join(', ')}`);
    found.push(
      ...(differences.length > 0 ? differences.map((difference) => `exact: ${difference}`) : [`exact: expected ${shown(matcher.exact)}, got ${shown(body)}`]),
    );
  }
  if (matcher.subset !== undefined) {
    const differences: string[] = [];
    subsetDifferences(matcher.subset, body, '', differences);
    found.push(...differences.map((difference) => `subset: ${difference}`));
  }
  for (const [path, pattern] of Object.entries(matcher.regex ?? {})) {
    const value = valueAt(body, path);
    if (value === undefined) {
      found.push(`regex: ${path}: no such field`);
      continue;
    }
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (!new RegExp(pattern, 'u').test(text)) found.push(`regex: ${path}: ${shown(value)} does not match /${pattern}/`);
  }
  return found;
}
