import { Workflow as WorkflowMessage } from '@loom/contracts';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { parseWorkflow, parseWorkflowJson, serializeWorkflowJson, workflowJsonSchema } from '../src/index.js';
import { workflowFromProto, workflowToProto } from '../src/workflow-proto.js';
import { workflowSchema } from '../src/workflow-schema.js';
import { checkAgainstSchema } from './json-schema-check.js';

// The workflow shape is written once, as the zod schema (src/workflow-schema.ts): the parser and the published JSON
// Schema are generated from it, and the TypeScript interfaces are checked against it when compiling. Two descriptions
// stay hand-written because they map to other shapes: the serializer's key order and the proto mapping. This test
// walks the zod schema and builds workflows in which every field is set (every optional present, every nullable
// non-null, every enum value used), so a field added to the schema but forgotten by the serializer, the proto mapping
// or the .proto itself — or a proto field the mapping never fills — fails here.

type Def = { type: string; [key: string]: unknown };
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The largest number of values of any enum in a schema: that many workflows use every enum value at least once. */
function enumWidth(schema: z.ZodType, seen = new Set<z.ZodType>()): number {
  if (seen.has(schema)) return 1;
  seen.add(schema);
  const def = defOf(schema);
  const inner = (key: string): number => enumWidth(def[key] as z.ZodType, seen);
  switch (def.type) {
    case 'enum':
      return Object.keys(def['entries'] as object).length;
    case 'object':
      return Math.max(1, ...Object.values(def['shape'] as Record<string, z.ZodType>).map((s) => enumWidth(s, seen)));
    case 'array':
      return inner('element');
    case 'optional':
    case 'nullable':
    case 'default':
      return inner('innerType');
    default:
      return 1;
  }
}

/** A value of `schema` with every field set; `variant` picks enum values and booleans, `counter` makes strings unique. */
function fullValue(schema: z.ZodType, variant: number, counter: { n: number }): unknown {
  const def = defOf(schema);
  switch (def.type) {
    case 'object':
      return Object.fromEntries(
        Object.entries(def['shape'] as Record<string, z.ZodType>)
          .filter(([key]) => key !== '$schema') // editors' hint, dropped by the parser
          .map(([key, value]) => [key, fullValue(value, variant, counter)]),
      );
    case 'string':
      return `text-${++counter.n}`;
    case 'boolean':
      return variant % 2 === 0; // all true in even variants: a false one is a proto default, indistinguishable from unset
    case 'enum': {
      const values = Object.values(def['entries'] as Record<string, string>);
      return values[variant % values.length];
    }
    case 'array':
      return [fullValue(def['element'] as z.ZodType, variant, counter), fullValue(def['element'] as z.ZodType, variant + 2, counter)];
    case 'optional':
    case 'nullable':
    case 'default':
      return fullValue(def['innerType'] as z.ZodType, variant, counter);
    case 'record':
      return { [`key-${++counter.n}`]: { nested: [1, 'two', true, null] }, [`key-${++counter.n}`]: 'value' };
    case 'unknown':
      return { list: [1.5, `text-${++counter.n}`, true, null, { deep: {} }] };
    default:
      throw new Error(`workflow-shape-drift: no full value for a zod ${def.type}; teach fullValue this type`);
  }
}

/** JSON paths of every field of a decoded proto message left at its default (empty string, 0, false, absent, empty list). */
function defaultedFields(value: unknown, path: string, out: string[]): string[] {
  if (value === undefined || value === '' || value === 0 || value === false || (Array.isArray(value) && value.length === 0)) out.push(path);
  else if (Array.isArray(value)) value.forEach((item, i) => defaultedFields(item, `${path}[${i}]`, out));
  else if (typeof value === 'object' && value !== null && !(value instanceof Uint8Array)) {
    for (const [key, item] of Object.entries(value)) defaultedFields(item, `${path}.${key}`, out);
  }
  return out;
}

const width = enumWidth(workflowSchema);
const workflows = Array.from({ length: width }, (_, variant) => {
  const counter = { n: 0 };
  return { variant, workflow: parseWorkflow(fullValue(workflowSchema, variant, counter)) };
});

describe('one description of the workflow shape: every representation carries every field', () => {
  it(`builds ${width} workflows with every field set and every enum value used`, () => {
    expect(width).toBeGreaterThan(1);
    const component = workflows[0]!.workflow.components[0]!;
    expect(component.resource).not.toBeNull();
    expect(component.skill).not.toBeNull();
    expect(component.skill?.parameters).toBeDefined();
  });

  it.each(workflows)('variant $variant: the published JSON Schema accepts it', ({ workflow }) => {
    expect(checkAgainstSchema(workflowJsonSchema(), JSON.parse(serializeWorkflowJson(workflow)))).toEqual([]);
  });

  it.each(workflows)('variant $variant: the file serializer writes every field and reads it back', ({ workflow }) => {
    expect(parseWorkflowJson(serializeWorkflowJson(workflow))).toStrictEqual(workflow);
  });

  it.each(workflows)('variant $variant: the proto mapping carries every field over the wire and back', ({ workflow }) => {
    const message = WorkflowMessage.decode(WorkflowMessage.encode(workflowToProto(workflow)).finish());
    expect(workflowFromProto(message)).toStrictEqual(workflow);
  });

  it('the proto mapping fills every field of the loom.v1 Workflow message (none left at its default)', () => {
    const message = WorkflowMessage.decode(WorkflowMessage.encode(workflowToProto(workflows[0]!.workflow)).finish());
    expect(defaultedFields(message, '$', [])).toEqual([]);
  });
});
