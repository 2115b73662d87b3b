import { describe, expect, it } from 'vitest';
import { type FieldViolation, ValidationError } from './errors.js';
import { findJsonSyntaxProblem, parseJsonText } from './json-text.js';

/** The violations of the ValidationError that parsing `text` throws. */
function violationsOfParsing(text: string): readonly FieldViolation[] {
  try {
    parseJsonText(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).violations;
  }
  throw new Error(`expected a ValidationError for ${JSON.stringify(text)}, nothing was thrown`);
}

describe('parseJsonText', () => {
  it('parses JSON and ignores a byte order mark', () => {
    expect(parseJsonText('\uFEFF{"a": [1, "x"]}')).toEqual({ a: [1, 'x'] });
  });

  it('reports malformed JSON for field "" with line, column and position', () => {
    const [violation, ...rest] = violationsOfParsing('{\n  "a": 1,\n  "b": }');
    expect(rest).toEqual([]);
    expect(violation).toEqual({
      field: '',
      description: "malformed JSON at line 3, column 8 (position 19): unexpected '}'",
      reason: 'MALFORMED_JSON',
    });
  });

  it('never quotes the text around the error (it may hold a password)', () => {
    const [violation] = violationsOfParsing('{"password": "s3cret-value" x}');
    expect(violation?.description).not.toContain('s3cret');
    expect(violation?.description).toContain('position 28');
  });
});

describe('findJsonSyntaxProblem', () => {
  it.each([
    ['{"a":1}', undefined],
    ['[1, -0.5e+3, "\\u00e9\\n", true, false, null, {}, []]', undefined],
    ['', [0, 'unexpected end of input']],
    ['{"a":1,}', [7, "expected a double-quoted property name, found '}'"]],
    ['{"a" 1}', [5, "expected ':' after a property name, found '1'"]],
    ['{"a":1} x', [8, "unexpected 'x' after the JSON value"]],
    ['{"a":tru}', [5, 'unknown literal (expected true, false or null)']],
    ['{"a":"x', [5, 'unterminated string']],
    ['[1,2', [4, 'unexpected end of input']],
    ['[1 2]', [3, "expected ',' or ']', found '2'"]],
    ['"a\nb"', [2, 'control character in a string (escape it)']],
    ['"\\x"', [1, 'bad escape in a string']],
    ['01', [1, 'malformed number']],
    ['[-]', [1, 'malformed number']],
    ["{'a':1}", [1, "expected a double-quoted property name, found '''"]],
  ])('%j', (text, expected) => {
    const problem = findJsonSyntaxProblem(text);
    expect(problem === undefined ? undefined : [problem.position, problem.description]).toEqual(expected);
    // the scan agrees with the platform parser on what is well formed
    expect(problem === undefined).toBe(parses(text));
  });

  it('handles deep nesting without recursion', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(findJsonSyntaxProblem(deep)).toBeUndefined();
    expect(findJsonSyntaxProblem(`${deep}]`)?.position).toBe(200_000);
  });
});

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
