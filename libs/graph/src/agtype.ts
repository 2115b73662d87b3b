import { type GraphNode, type GraphPath, type GraphRelationship, type GraphValue } from './graph-store.js';

/** An agtype text that does not follow AGE's output format. */
export class AgtypeSyntaxError extends SyntaxError {
  constructor(
    readonly text: string,
    readonly position: number,
    expected: string,
  ) {
    super(`unreadable agtype value: expected ${expected} at position ${position}`);
  }
}

// a number is kept as text until its annotation (::numeric, ::float) is known, so nothing is rounded early
class NumberText {
  constructor(readonly numberText: string) {}
}

type Raw = null | boolean | number | string | NumberText | Raw[] | { [key: string]: Raw } | GraphNode | GraphRelationship | GraphPath;

const MAX_SIGNIFICANT_DIGITS = 15; // every decimal with up to 15 significant digits survives a round trip through a double

/**
 * Parses AGE's text output of one agtype value (JSON with `::vertex`, `::edge`, `::path` and `::numeric` annotations,
 * plus NaN and ±Infinity) into plain values: vertices and edges become GraphNode and GraphRelationship (ids as
 * decimal text, since graphids pass 2^53 once a graph has more than 32 labels), paths become GraphPath, and integers
 * outside the safe range become decimal strings.
 */
export function parseAgtype(text: string): GraphValue {
  const parser = new AgtypeParser(text);
  const value = parser.value();
  parser.end();
  return toPlain(value);
}

class AgtypeParser {
  private index = 0;

  constructor(private readonly text: string) {}

  value(): Raw {
    this.skipSpace();
    const char = this.text[this.index];
    let value: Raw;
    if (char === '{') value = this.object();
    else if (char === '[') value = this.array();
    else if (char === '"') value = this.string();
    else if (char !== undefined && /[-\d]/.test(char) && !this.text.startsWith('-Infinity', this.index)) value = this.number();
    else value = this.literal();
    return this.annotated(value);
  }

  end(): void {
    this.skipSpace();
    if (this.index !== this.text.length) this.fail('the end of the value');
  }

  private annotated(value: Raw): Raw {
    if (!this.text.startsWith('::', this.index)) return value;
    const match = /^::(\w+)/.exec(this.text.slice(this.index));
    if (match === null) this.fail('a type name after ::');
    this.index += match[0].length;
    switch (match[1]) {
      case 'vertex':
        return vertex(value);
      case 'edge':
        return edge(value);
      case 'path':
        return path(value);
      case 'numeric':
        return isNumberText(value) ? numeric(value.numberText) : value;
      default:
        return value; // ::float and ::integer change nothing in the text form
    }
  }

  private object(): Raw {
    const result: { [key: string]: Raw } = {};
    this.index++;
    this.skipSpace();
    if (this.text[this.index] === '}') {
      this.index++;
      return result;
    }
    for (;;) {
      this.skipSpace();
      if (this.text[this.index] !== '"') this.fail('a key');
      const key = this.string();
      this.skipSpace();
      if (this.text[this.index] !== ':') this.fail("':'");
      this.index++;
      // defineProperty, so a key named __proto__ is a key and not the prototype
      Object.defineProperty(result, key, { value: this.value(), enumerable: true, writable: true, configurable: true });
      this.skipSpace();
      const separator = this.text[this.index++];
      if (separator === '}') return result;
      if (separator !== ',') this.fail("',' or '}'", this.index - 1);
    }
  }

  private array(): Raw[] {
    const result: Raw[] = [];
    this.index++;
    this.skipSpace();
    if (this.text[this.index] === ']') {
      this.index++;
      return result;
    }
    for (;;) {
      result.push(this.value());
      this.skipSpace();
      const separator = this.text[this.index++];
      if (separator === ']') return result;
      if (separator !== ',') this.fail("',' or ']'", this.index - 1);
    }
  }

  private string(): string {
    const start = this.index;
    this.index++;
    while (this.index < this.text.length && this.text[this.index] !== '"') this.index += this.text[this.index] === '\\' ? 2 : 1;
    if (this.index >= this.text.length) this.fail('a closing quote', start);
    this.index++;
    try {
      return JSON.parse(this.text.slice(start, this.index)) as string; // AGE escapes strings as JSON does
    } catch {
      return this.fail('a string with JSON escapes', start);
    }
  }

  private number(): NumberText {
    const match = /^-?\d+(\.\d+)?([eE][-+]?\d+)?/.exec(this.text.slice(this.index));
    if (match === null) this.fail('a number');
    this.index += match[0].length;
    return new NumberText(match[0]);
  }

  private literal(): Raw {
    for (const [word, value] of LITERALS) {
      if (this.text.startsWith(word, this.index)) {
        this.index += word.length;
        return value;
      }
    }
    return this.fail('a value');
  }

  private skipSpace(): void {
    while (this.index < this.text.length && /\s/.test(this.text[this.index]!)) this.index++;
  }

  private fail(expected: string, at = this.index): never {
    throw new AgtypeSyntaxError(this.text, at, expected);
  }
}

const LITERALS: readonly [string, Raw][] = [
  ['null', null],
  ['true', true],
  ['false', false],
  ['NaN', new NumberText('NaN')],
  ['Infinity', new NumberText('Infinity')],
  ['-Infinity', new NumberText('-Infinity')],
];

function isNumberText(value: Raw | undefined): value is NumberText {
  return value instanceof NumberText;
}

function integerOrText(text: string): number | string {
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : text.replace(/^(-?)0+(?=\d)/, '$1');
}

/** An integer when safe, a double for decimals that keep their digits, else the decimal text. */
function numeric(text: string): number | string {
  if (/^-?\d+$/.test(text)) return integerOrText(text);
  if (!/^-?[\d.]+$/.test(text)) return Number(text); // NaN, Infinity, exponent forms
  const digits = text.replace(/[-.]/g, '').replace(/^0+/, '').replace(/0+$/, '');
  return digits.length <= MAX_SIGNIFICANT_DIGITS ? Number(text) : text;
}

function plainNumber(text: string): number | string {
  return /^-?\d+$/.test(text) ? integerOrText(text) : Number(text);
}

function toPlain(value: Raw): GraphValue {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(toPlain);
  if (isNumberText(value)) return plainNumber(value.numberText);
  if (isGraphEntity(value)) return value as GraphValue;
  const result: { [key: string]: GraphValue } = {};
  for (const [key, entry] of Object.entries(value))
    Object.defineProperty(result, key, { value: toPlain(entry as Raw), enumerable: true, writable: true, configurable: true });
  return result;
}

// vertices, edges and paths are built plain already; a marker keeps toPlain from walking them again
const entities = new WeakSet<object>();

function isGraphEntity(value: object): boolean {
  return entities.has(value);
}

function entity<T extends object>(value: T): T {
  entities.add(value);
  return value;
}

function field(value: Raw, name: string): Raw | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as { [key: string]: Raw })[name] : undefined;
}

function idText(value: Raw | undefined): string {
  if (!isNumberText(value) || !/^-?\d+$/.test(value.numberText)) throw new AgtypeSyntaxError(JSON.stringify(value), 0, 'an integer graph id');
  return value.numberText;
}

function propertiesOf(value: Raw): { [key: string]: GraphValue } {
  const properties = toPlain(field(value, 'properties') ?? {});
  return typeof properties === 'object' && properties !== null && !Array.isArray(properties) ? (properties as { [key: string]: GraphValue }) : {};
}

function vertex(value: Raw): GraphNode {
  const label = field(value, 'label');
  // AGE gives a vertex created without a label the label ''
  return entity({ id: idText(field(value, 'id')), labels: typeof label === 'string' && label !== '' ? [label] : [], properties: propertiesOf(value) });
}

function edge(value: Raw): GraphRelationship {
  const label = field(value, 'label');
  return entity({
    id: idText(field(value, 'id')),
    type: typeof label === 'string' ? label : '',
    start: idText(field(value, 'start_id')),
    end: idText(field(value, 'end_id')),
    properties: propertiesOf(value),
  });
}

function path(value: Raw): GraphPath {
  const elements = Array.isArray(value) ? value : [];
  const nodes = elements.filter((_, index) => index % 2 === 0) as GraphNode[];
  const relationships = elements.filter((_, index) => index % 2 === 1) as GraphRelationship[];
  return entity({ nodes, relationships });
}
