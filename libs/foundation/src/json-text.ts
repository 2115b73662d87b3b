import { ValidationError } from './errors.js';

/** Where and why a JSON text is malformed. */
export interface JsonSyntaxProblem {
  /** Offset in UTF-16 code units from the start of the text. */
  readonly position: number;
  /** 1-based line. */
  readonly line: number;
  /** 1-based column, in UTF-16 code units. */
  readonly column: number;
  readonly description: string;
}

/**
 * Parses JSON text; malformed text is a ValidationError for field '' naming line, column and
 * position. A leading byte order mark is ignored.
 */
export function parseJsonText(text: string): unknown {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    // V8's message quotes the text around the error, which may hold a password in clear: neither
    // it nor the error is passed on, the position comes from our own scan instead
    const problem = findJsonSyntaxProblem(body);
    const where = problem === undefined ? '' : ` at line ${problem.line}, column ${problem.column} (position ${problem.position})`;
    const why = problem === undefined ? '' : `: ${problem.description}`;
    throw new ValidationError([{ field: '', description: `malformed JSON${where}${why}`, reason: 'MALFORMED_JSON' }]);
  }
}

type Container = 'object' | 'array';
// what the scanner expects next inside the innermost container
type Expect = 'value' | 'first-value' | 'key' | 'first-key' | 'colon' | 'comma-or-end';

/** Finds the first syntax error of a JSON text (RFC 8259), or undefined when it is well formed. */
export function findJsonSyntaxProblem(text: string): JsonSyntaxProblem | undefined {
  // an explicit stack instead of recursion: deeply nested input must not overflow the call stack
  const stack: Container[] = [];
  let expect: Expect = 'value';
  let done = false;
  let pos = 0;

  const fail = (at: number, description: string): JsonSyntaxProblem => locate(text, at, description);
  const skipWhitespace = (): void => {
    while (pos < text.length && ' \t\n\r'.includes(text.charAt(pos))) pos++;
  };

  for (;;) {
    skipWhitespace();
    if (pos >= text.length) {
      return done ? undefined : fail(pos, 'unexpected end of input');
    }
    const char = text.charAt(pos);
    if (done) return fail(pos, `unexpected ${describe(char)} after the JSON value`);
    const top = stack[stack.length - 1];

    if (expect === 'colon') {
      if (char !== ':') return fail(pos, `expected ':' after a property name, found ${describe(char)}`);
      pos++;
      expect = 'value';
      continue;
    }
    if (expect === 'comma-or-end') {
      const close = top === 'object' ? '}' : ']';
      if (char === ',') {
        pos++;
        expect = top === 'object' ? 'key' : 'value';
      } else if (char === close) {
        pos++;
        stack.pop();
        expect = 'comma-or-end';
        done = stack.length === 0;
      } else {
        return fail(pos, `expected ',' or '${close}', found ${describe(char)}`);
      }
      continue;
    }
    if (expect === 'key' || expect === 'first-key') {
      if (char === '}' && expect === 'first-key') {
        pos++;
        stack.pop();
        expect = 'comma-or-end';
        done = stack.length === 0;
        continue;
      }
      if (char !== '"') return fail(pos, `expected a double-quoted property name, found ${describe(char)}`);
      const end = scanString(text, pos);
      if (typeof end !== 'number') return end;
      pos = end;
      expect = 'colon';
      continue;
    }

    // a value is expected
    if (char === ']' && expect === 'first-value') {
      pos++;
      stack.pop();
      expect = 'comma-or-end';
      done = stack.length === 0;
      continue;
    }
    if (char === '{' || char === '[') {
      stack.push(char === '{' ? 'object' : 'array');
      pos++;
      expect = char === '{' ? 'first-key' : 'first-value';
      continue;
    }
    let end: number | JsonSyntaxProblem;
    if (char === '"') end = scanString(text, pos);
    else if (char === '-' || (char >= '0' && char <= '9')) end = scanNumber(text, pos);
    else if (char === 't' || char === 'f' || char === 'n') end = scanLiteral(text, pos);
    else return fail(pos, `unexpected ${describe(char)}`);
    if (typeof end !== 'number') return end;
    pos = end;
    expect = 'comma-or-end';
    done = stack.length === 0;
  }
}

function scanString(text: string, start: number): number | JsonSyntaxProblem {
  let pos = start + 1;
  while (pos < text.length) {
    const code = text.charCodeAt(pos);
    if (code === 0x22) return pos + 1;
    if (code < 0x20) return locate(text, pos, 'control character in a string (escape it)');
    if (code === 0x5c) {
      const escape = text.charAt(pos + 1);
      if (escape === 'u') {
        if (!/^[0-9A-Fa-f]{4}$/.test(text.slice(pos + 2, pos + 6))) return locate(text, pos, 'bad \\u escape in a string');
        pos += 6;
        continue;
      }
      if (!'"\\/bfnrt'.includes(escape) || escape === '') return locate(text, pos, 'bad escape in a string');
      pos += 2;
      continue;
    }
    pos++;
  }
  return locate(text, start, 'unterminated string');
}

function scanNumber(text: string, start: number): number | JsonSyntaxProblem {
  const number = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
  number.lastIndex = start;
  const match = number.exec(text);
  if (match === null) return locate(text, start, 'malformed number');
  const end = start + match[0].length;
  const next = text.charAt(end);
  if (/[0-9.eE+-]/.test(next)) return locate(text, end, 'malformed number');
  return end;
}

function scanLiteral(text: string, start: number): number | JsonSyntaxProblem {
  for (const literal of ['true', 'false', 'null']) {
    if (text.startsWith(literal, start)) return start + literal.length;
  }
  return locate(text, start, 'unknown literal (expected true, false or null)');
}

function describe(char: string): string {
  // characters are named, never quoted with their surroundings
  return /^[\x21-\x7e]$/.test(char) ? `'${char}'` : `character U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
}

function locate(text: string, position: number, description: string): JsonSyntaxProblem {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < position && i < text.length; i++) {
    if (text.charCodeAt(i) === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  }
  return { position, line, column: position - lineStart + 1, description };
}
