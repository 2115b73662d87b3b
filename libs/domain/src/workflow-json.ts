import { parseJsonText } from './json-text.js';
import type {
  ComponentDefinition,
  ComponentInstance,
  OptionDefinition,
  ResourceDefinition,
  ResourceInstance,
  Schedule,
  Skill,
  WorkflowConfiguration,
} from './workflow.js';
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
  return `${JSON.stringify(canonicalWorkflow(workflow), null, 2)}\n`;
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
  const { enabled, cron, timezone, overlap, catchUp } = schedule;
  return `${JSON.stringify({ enabled, cron, timezone, overlap, catchUp }, null, 2)}\n`;
}

// The canonical* functions rebuild each object with its keys in the specification's order;
// free-form objects (parameters, option values, skill inputs and outputs) keep their own order.

function canonicalWorkflow(workflow: WorkflowConfiguration): WorkflowConfiguration {
  return {
    name: workflow.name,
    autoStart: workflow.autoStart,
    components: workflow.components.map(canonicalComponentInstance),
    links: workflow.links.map(({ from, to }) => ({ from, to })),
    resources: workflow.resources.map(canonicalResourceInstance),
    skills: workflow.skills.map(canonicalSkill),
    workflowResources: workflow.workflowResources.map(canonicalResourceInstance),
  };
}

function canonicalComponentInstance(instance: ComponentInstance): ComponentInstance {
  return {
    name: instance.name,
    component: canonicalComponentDefinition(instance.component),
    options: instance.options.map(({ name, value }) => ({ name, value })),
    resource: instance.resource == null ? null : canonicalResourceInstance(instance.resource),
    skill: instance.skill === null ? null : canonicalSkill(instance.skill),
    // the specification lists outputs before inputs
    skillConfiguration: { outputs: instance.skillConfiguration.outputs, inputs: instance.skillConfiguration.inputs },
  };
}

function canonicalComponentDefinition(definition: ComponentDefinition): ComponentDefinition {
  return {
    qualifiedName: definition.qualifiedName,
    name: definition.name,
    type: definition.type,
    state: definition.state,
    inputType: definition.inputType,
    outputType: definition.outputType,
    options: definition.options.map(canonicalOptionDefinition),
    resource: definition.resource,
    capabilityQualifiedName: definition.capabilityQualifiedName,
    experimental: definition.experimental,
    dryRunSupported: definition.dryRunSupported,
  };
}

function canonicalOptionDefinition(option: OptionDefinition): OptionDefinition {
  return {
    group: option.group,
    name: option.name,
    type: option.type,
    label: option.label,
    required: option.required,
    defaultValue: option.defaultValue,
    overridable: option.overridable,
  };
}

function canonicalResourceInstance(instance: ResourceInstance): ResourceInstance {
  return { name: instance.name, resource: canonicalResourceDefinition(instance.resource), parameters: instance.parameters };
}

function canonicalResourceDefinition(definition: ResourceDefinition): ResourceDefinition {
  return {
    qualifiedName: definition.qualifiedName,
    name: definition.name,
    parameters: definition.parameters.map(({ name, type, required }) => ({ name, type, required })),
    group: definition.group,
    experimental: definition.experimental,
  };
}

function canonicalSkill(skill: Skill): Skill {
  // absent optional fields stay absent: JSON.stringify drops undefined
  return {
    name: skill.name,
    url: skill.url,
    capability: skill.capability,
    pipeline: skill.pipeline,
    version: skill.version,
    parameters: skill.parameters,
  };
}
