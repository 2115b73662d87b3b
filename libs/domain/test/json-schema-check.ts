// A small checker for the subset of JSON Schema 2020-12 that zod's toJSONSchema emits for loom's
// files (type, enum, properties, required, additionalProperties, items, anyOf, $ref into $defs,
// minLength, minimum, maximum). Keywords it does not know fail the check, so the subset cannot
// silently grow. Enough to prove that the published schema accepts and rejects what the parser does.

type Schema = Record<string, unknown>;

const KNOWN = new Set([
  '$schema',
  '$id',
  '$ref',
  '$defs',
  'title',
  'description',
  'default',
  'type',
  'enum',
  'properties',
  'required',
  'additionalProperties',
  'propertyNames',
  'items',
  'anyOf',
  'minLength',
  'minimum',
  'maximum',
]);

/** The JSON paths at which a value breaks a schema; empty when it conforms. */
export function checkAgainstSchema(root: Schema, value: unknown): string[] {
  const errors: string[] = [];
  check(root, root, value, '$', errors);
  return errors;
}

function check(root: Schema, schema: Schema, value: unknown, path: string, errors: string[]): void {
  for (const key of Object.keys(schema)) {
    if (!KNOWN.has(key)) throw new Error(`unsupported JSON Schema keyword ${key} at ${path}`);
  }
  if (typeof schema['$ref'] === 'string') {
    const name = /^#\/\$defs\/(.+)$/.exec(schema['$ref'])?.[1];
    const target = name === undefined ? undefined : (root['$defs'] as Record<string, Schema> | undefined)?.[name];
    if (target === undefined) throw new Error(`unresolvable $ref ${schema['$ref']}`);
    check(root, target, value, path, errors);
  }
  if (schema['type'] !== undefined) {
    const types = Array.isArray(schema['type']) ? (schema['type'] as string[]) : [schema['type'] as string];
    if (!types.some((type) => hasType(value, type))) {
      errors.push(`${path}: not ${types.join('|')}`);
      return;
    }
  }
  if (Array.isArray(schema['enum']) && !schema['enum'].includes(value)) errors.push(`${path}: not in enum`);
  if (Array.isArray(schema['anyOf'])) {
    const branches = schema['anyOf'] as Schema[];
    if (!branches.some((branch) => checkAgainstBranch(root, branch, value, path))) errors.push(`${path}: matches no anyOf branch`);
  }
  if (typeof value === 'string' && typeof schema['minLength'] === 'number' && value.length < schema['minLength']) errors.push(`${path}: too short`);
  if (typeof value === 'number' && typeof schema['minimum'] === 'number' && value < schema['minimum']) errors.push(`${path}: too small`);
  if (typeof value === 'number' && typeof schema['maximum'] === 'number' && value > schema['maximum']) errors.push(`${path}: too big`);
  if (Array.isArray(value) && schema['items'] !== undefined) {
    value.forEach((item, index) => check(root, schema['items'] as Schema, item, `${path}[${index}]`, errors));
  }
  if (isObject(value)) {
    const properties = (schema['properties'] ?? {}) as Record<string, Schema>;
    for (const required of (schema['required'] ?? []) as string[]) {
      if (!(required in value)) errors.push(`${path}.${required}: missing`);
    }
    for (const [key, item] of Object.entries(value)) {
      const property = properties[key];
      if (property !== undefined) check(root, property, item, `${path}.${key}`, errors);
      else if (schema['additionalProperties'] === false) errors.push(`${path}.${key}: not allowed`);
      else if (isObject(schema['additionalProperties'])) check(root, schema['additionalProperties'], item, `${path}.${key}`, errors);
    }
  }
}

function checkAgainstBranch(root: Schema, branch: Schema, value: unknown, path: string): boolean {
  const errors: string[] = [];
  check(root, branch, value, path, errors);
  return errors.length === 0;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isObject(value);
    case 'integer':
      return Number.isInteger(value);
    default:
      return typeof value === type;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
