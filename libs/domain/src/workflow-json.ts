import type { z } from 'zod';
import { parseJsonText } from '@loom/foundation';
import type { Schedule, WorkflowConfiguration } from './workflow.js';
import { scheduleSchema, workflowSchema } from './workflow-schema.js';
import { parseWithSchema } from './zod-violations.js';

/**
 * Reads the text of a `.workflow.json` file. Malformed JSON is a ValidationError for field ''
 * with line, column and position; a wrong shape is a ValidationError listing every violation by
 * JSON path (`components[0].component.qualifiedName`). Unknown fields are violations, except
 * inside component, option, resource and parameter definitions, where they are dropped (see
 * workflow-schema.ts). A component instance without `resource` gets `resource: null`.
 */
export function parseWorkflowJson(text: string): WorkflowConfiguration {
  return parseWorkflow(parseJsonText(text));
}

/** Validates an already parsed `.workflow.json` value; see parseWorkflowJson. */
export function parseWorkflow(value: unknown): WorkflowConfiguration {
  const { $schema: _editorHint, ...workflow } = parseWithSchema(workflowSchema, value);
  return workflow;
}

/**
 * Writes a workflow as the text of a `.workflow.json` file: 2-space indented JSON, keys in the
 * order of the specification, a newline at the end; an absent component `resource` is written
 * as null. The workflow is expected to be valid (as parseWorkflow returns it).
 */
export function serializeWorkflowJson(workflow: WorkflowConfiguration): string {
  // an absent component resource is written as null, as the specification's files have it
  const withResources = { ...workflow, components: workflow.components.map((component) => ({ ...component, resource: component.resource ?? null })) };
  return `${JSON.stringify(inSchemaOrder(workflowSchema, withResources), null, 2)}\n`;
}

/** Reads the text of a `.scheduler.json` file; errors as for parseWorkflowJson. */
export function parseScheduleJson(text: string): Schedule {
  return parseSchedule(parseJsonText(text));
}

/** Validates an already parsed `.scheduler.json` value (shape only: cron and time zone are not interpreted). */
export function parseSchedule(value: unknown): Schedule {
  return parseWithSchema(scheduleSchema, value);
}

/** Writes a schedule as the text of a `.scheduler.json` file, formatted as serializeWorkflowJson does. */
export function serializeScheduleJson(schedule: Schedule): string {
  return `${JSON.stringify(inSchemaOrder(scheduleSchema, schedule), null, 2)}\n`;
}

/**
 * A value rebuilt with the keys of every object the schema describes in the schema's order, which is the
 * specification's (workflow-schema.ts declares them so); free-form objects (parameters, option values, skill inputs
 * and outputs) keep their own order, and absent optional keys stay absent. The file's key order is thus read from the
 * one description of the shape, not written a second time.
 */
function inSchemaOrder(schema: z.ZodType, value: unknown): unknown {
  const def = (schema as unknown as { _zod: { def: { type: string; shape?: Record<string, z.ZodType>; element?: z.ZodType; innerType?: z.ZodType } } })._zod
    .def;
  if (value === null || value === undefined) return value;
  switch (def.type) {
    case 'object': {
      const source = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(def.shape ?? {})) if (source[key] !== undefined) out[key] = inSchemaOrder(field, source[key]);
      return out;
    }
    case 'array':
      return (value as unknown[]).map((item) => inSchemaOrder(def.element as z.ZodType, item));
    case 'optional':
    case 'nullable':
    case 'default':
      return inSchemaOrder(def.innerType as z.ZodType, value);
    default:
      return value; // strings, booleans, enums, free-form JSON values and records
  }
}
