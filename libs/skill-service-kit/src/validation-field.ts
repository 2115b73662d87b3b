import { formatJsonPath } from '@loom/domain';

/** One schema violation as ajv reports it. */
export interface SchemaViolation {
  readonly instancePath: string;
  readonly params: Record<string, unknown>;
}

/** The JSON path of the field a violation is about (`annotators[2]`, `name` for a missing `name`); '' for the body itself. */
export function validationField(violation: SchemaViolation): string {
  const keys: PropertyKey[] = violation.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
  const named = violation.params.missingProperty ?? violation.params.additionalProperty;
  if (typeof named === 'string') keys.push(named);
  return formatJsonPath(keys);
}
