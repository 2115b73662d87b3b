// The loom.v1 conversion, apart from the main entry as @loom/domain/proto: the generated contracts load @grpc/grpc-js
// (and http2), which a package that only reads or validates workflows (a skill, the foundation) must not pay for.

import {
  CatchUpPolicy,
  type ComponentDefinition as ComponentDefinitionMessage,
  type ComponentInstance as ComponentInstanceMessage,
  ComponentState,
  ComponentType,
  type OptionDefinition as OptionDefinitionMessage,
  OptionType,
  OverlapPolicy,
  ParameterType,
  type ResourceDefinition as ResourceDefinitionMessage,
  type ResourceInstance as ResourceInstanceMessage,
  type Schedule as ScheduleMessage,
  type Skill as SkillMessage,
  SkillCapability,
  type Workflow as WorkflowMessage,
} from '@loom/contracts';
import { appendJsonPath, type FieldViolation, ValidationError } from '@loom/foundation';
import { workflowSchema } from './workflow-schema.js';
import { parseWithSchema } from './zod-violations.js';
import type {
  CatchUpPolicyName,
  ComponentDefinition,
  ComponentInstance,
  ComponentStateName,
  ComponentTypeName,
  OptionDefinition,
  OptionTypeName,
  OverlapPolicyName,
  ParameterTypeName,
  ResourceDefinition,
  ResourceInstance,
  Schedule,
  Skill,
  SkillCapabilityName,
  WorkflowConfiguration,
} from './workflow.js';

// Proto3 cannot tell some JSON values apart, so the conversion maps them as follows:
// - component instance `resource` null or absent ↔ no message; back it is null;
// - `skill` null ↔ no message;
// - component definition `resource` null ↔ ''; `capabilityQualifiedName` and `experimental`
//   null ↔ not set (proto3 optional);
// - option `defaultValue` and option `value` null ↔ a google.protobuf.Value holding null
//   (a Value that is not set at all also reads back as null);
// - skill `capability` absent ↔ SKILL_CAPABILITY_UNSPECIFIED; `pipeline` and `version` absent
//   ↔ '' (so a blank version reads back as absent, which means the same: `/annotate`);
// - skillConfiguration, resource `parameters` not set ↔ empty objects.
// Any other UNSPECIFIED or unknown enum number coming from proto is a violation.

const componentTypes: Record<ComponentTypeName, ComponentType> = {
  SOURCE: ComponentType.COMPONENT_TYPE_SOURCE,
  PROCESSOR: ComponentType.COMPONENT_TYPE_PROCESSOR,
  SKILL: ComponentType.COMPONENT_TYPE_SKILL,
  PERSISTENCE: ComponentType.COMPONENT_TYPE_PERSISTENCE,
  DATA_SCIENCE: ComponentType.COMPONENT_TYPE_DATA_SCIENCE,
  SINK: ComponentType.COMPONENT_TYPE_SINK,
};

const componentStates: Record<ComponentStateName, ComponentState> = {
  AVAILABLE: ComponentState.COMPONENT_STATE_AVAILABLE,
  DISABLED: ComponentState.COMPONENT_STATE_DISABLED,
};

const optionTypes: Record<OptionTypeName, OptionType> = {
  BOOLEAN: OptionType.OPTION_TYPE_BOOLEAN,
  INTEGER: OptionType.OPTION_TYPE_INTEGER,
  NUMBER: OptionType.OPTION_TYPE_NUMBER,
  STRING: OptionType.OPTION_TYPE_STRING,
  TEXT: OptionType.OPTION_TYPE_TEXT,
  SCRIPT: OptionType.OPTION_TYPE_SCRIPT,
  JSON: OptionType.OPTION_TYPE_JSON,
  COMPONENT_SELECTION_FAILURE_HANDLER: OptionType.OPTION_TYPE_COMPONENT_SELECTION_FAILURE_HANDLER,
};

const parameterTypes: Record<ParameterTypeName, ParameterType> = {
  STRING: ParameterType.PARAMETER_TYPE_STRING,
  INTEGER: ParameterType.PARAMETER_TYPE_INTEGER,
  BOOLEAN: ParameterType.PARAMETER_TYPE_BOOLEAN,
  PASSWORD: ParameterType.PARAMETER_TYPE_PASSWORD,
};

const skillCapabilities: Record<SkillCapabilityName, SkillCapability> = {
  ENTITY_EXTRACTION: SkillCapability.SKILL_CAPABILITY_ENTITY_EXTRACTION,
  KEYWORD_EXTRACTION: SkillCapability.SKILL_CAPABILITY_KEYWORD_EXTRACTION,
  WEB_DATA_EXTRACTION: SkillCapability.SKILL_CAPABILITY_WEB_DATA_EXTRACTION,
  PDF_PARSING: SkillCapability.SKILL_CAPABILITY_PDF_PARSING,
};

const overlapPolicies: Record<OverlapPolicyName, OverlapPolicy> = {
  SKIP: OverlapPolicy.OVERLAP_POLICY_SKIP,
  QUEUE: OverlapPolicy.OVERLAP_POLICY_QUEUE,
  ALLOW: OverlapPolicy.OVERLAP_POLICY_ALLOW,
};

const catchUpPolicies: Record<CatchUpPolicyName, CatchUpPolicy> = {
  NONE: CatchUpPolicy.CATCH_UP_POLICY_NONE,
  LATEST: CatchUpPolicy.CATCH_UP_POLICY_LATEST,
  ALL: CatchUpPolicy.CATCH_UP_POLICY_ALL,
};

/** Converts a workflow configuration to its loom.v1.Workflow message. */
export function workflowToProto(workflow: WorkflowConfiguration): WorkflowMessage {
  return {
    name: workflow.name,
    autoStart: workflow.autoStart,
    components: workflow.components.map(componentInstanceToProto),
    links: workflow.links.map(({ from, to }) => ({ from, to })),
    resources: workflow.resources.map(resourceInstanceToProto),
    skills: workflow.skills.map(skillToProto),
    workflowResources: workflow.workflowResources.map(resourceInstanceToProto),
  };
}

function componentInstanceToProto(instance: ComponentInstance): ComponentInstanceMessage {
  return {
    name: instance.name,
    component: componentDefinitionToProto(instance.component),
    options: instance.options.map(({ name, value }) => ({ name, value })),
    resource: instance.resource == null ? undefined : resourceInstanceToProto(instance.resource),
    skill: instance.skill === null ? undefined : skillToProto(instance.skill),
    skillConfiguration: { inputs: instance.skillConfiguration.inputs, outputs: instance.skillConfiguration.outputs },
  };
}

/** A component definition as the loom.v1 message (ListComponentDefinitions). */
export function componentDefinitionToProto(definition: ComponentDefinition): ComponentDefinitionMessage {
  return {
    qualifiedName: definition.qualifiedName,
    name: definition.name,
    type: componentTypes[definition.type],
    state: componentStates[definition.state],
    inputType: definition.inputType,
    outputType: definition.outputType,
    options: definition.options.map(optionDefinitionToProto),
    resource: definition.resource ?? '',
    capabilityQualifiedName: definition.capabilityQualifiedName ?? undefined,
    experimental: definition.experimental ?? undefined,
    dryRunSupported: definition.dryRunSupported,
  };
}

function optionDefinitionToProto(option: OptionDefinition): OptionDefinitionMessage {
  return {
    group: option.group,
    name: option.name,
    type: optionTypes[option.type],
    label: option.label,
    required: option.required,
    defaultValue: option.defaultValue,
    overridable: option.overridable,
  };
}

function resourceInstanceToProto(instance: ResourceInstance): ResourceInstanceMessage {
  return { name: instance.name, resource: resourceDefinitionToProto(instance.resource), parameters: instance.parameters };
}

/** A resource definition as the loom.v1 message. */
export function resourceDefinitionToProto(definition: ResourceDefinition): ResourceDefinitionMessage {
  return {
    qualifiedName: definition.qualifiedName,
    name: definition.name,
    parameters: definition.parameters.map(({ name, type, required }) => ({ name, type: parameterTypes[type], required })),
    group: definition.group,
    experimental: definition.experimental,
  };
}

function skillToProto(skill: Skill): SkillMessage {
  return {
    name: skill.name,
    url: skill.url,
    capability: skill.capability === undefined ? SkillCapability.SKILL_CAPABILITY_UNSPECIFIED : skillCapabilities[skill.capability],
    pipeline: skill.pipeline ?? '',
    version: skill.version ?? '',
    parameters: skill.parameters,
  };
}

/**
 * Converts a loom.v1.Workflow message to a workflow configuration. An UNSPECIFIED or unknown
 * enum value, a missing component or resource definition, or a value no JSON file can hold
 * (NaN) is a ValidationError naming every such field by its JSON path
 * (`components[0].component.type`).
 */
export function workflowFromProto(message: WorkflowMessage): WorkflowConfiguration {
  const reader = new ProtoReader();
  const workflow: WorkflowConfiguration = {
    name: message.name,
    autoStart: message.autoStart,
    components: message.components.map((instance, i) => reader.componentInstance(instance, `components[${i}]`)),
    links: message.links.map(({ from, to }) => ({ from, to })),
    resources: message.resources.map((instance, i) => reader.resourceInstance(instance, `resources[${i}]`)),
    skills: message.skills.map((skill, i) => reader.skill(skill, `skills[${i}]`)),
    workflowResources: message.workflowResources.map((instance, i) => reader.resourceInstance(instance, `workflowResources[${i}]`)),
  };
  reader.throwIfInvalid();
  // the shape is right by construction; this catches values no JSON file can hold (NaN, a
  // Value with nothing set inside a Struct, a `__proto__` key), named by JSON path as well
  return parseWithSchema(workflowSchema, workflow);
}

/** The component definitions of a ListComponentDefinitions answer, as the specification writes them. */
export function componentDefinitionsFromProto(messages: readonly ComponentDefinitionMessage[]): ComponentDefinition[] {
  const reader = new ProtoReader();
  const definitions = messages.map((message, i) => reader.componentDefinition(message, `definitions[${i}]`));
  reader.throwIfInvalid();
  return definitions;
}

/** Converts a schedule to its loom.v1.Schedule message. */
export function scheduleToProto(schedule: Schedule): ScheduleMessage {
  return {
    enabled: schedule.enabled,
    cron: schedule.cron,
    timezone: schedule.timezone,
    overlap: overlapPolicies[schedule.overlap],
    catchUp: catchUpPolicies[schedule.catchUp],
  };
}

/** Converts a loom.v1.Schedule message to a schedule; an UNSPECIFIED policy is a ValidationError naming it. */
export function scheduleFromProto(message: ScheduleMessage): Schedule {
  const reader = new ProtoReader();
  const schedule: Schedule = {
    enabled: message.enabled,
    cron: message.cron,
    timezone: message.timezone,
    overlap: reader.enumName(overlapPolicies, message.overlap, 'overlap', 'SKIP'),
    catchUp: reader.enumName(catchUpPolicies, message.catchUp, 'catchUp', 'NONE'),
  };
  reader.throwIfInvalid();
  return schedule;
}

const MISSING_COMPONENT_DEFINITION: ComponentDefinition = {
  qualifiedName: '',
  name: '',
  type: 'SOURCE',
  state: 'AVAILABLE',
  inputType: '',
  outputType: '',
  options: [],
  resource: null,
  capabilityQualifiedName: null,
  experimental: null,
  dryRunSupported: false,
};

const MISSING_RESOURCE_DEFINITION: ResourceDefinition = { qualifiedName: '', name: '', parameters: [], group: '', experimental: false };

// Reads messages into domain values, collecting a violation per unusable field so that one
// error names them all; a placeholder stands in for a bad value until then.
class ProtoReader {
  private readonly violations: FieldViolation[] = [];

  throwIfInvalid(): void {
    if (this.violations.length > 0) throw new ValidationError(this.violations);
  }

  enumName<N extends string>(table: Record<N, number>, value: number, field: string, placeholder: N): N {
    const name = namesOf(table).get(value) as N | undefined;
    if (name !== undefined) return name;
    const description = value === 0 ? 'is unspecified' : `unknown enum value ${value}`;
    this.violations.push({ field, description, reason: value === 0 ? 'MISSING_FIELD' : 'INVALID_VALUE' });
    return placeholder;
  }

  componentInstance(message: ComponentInstanceMessage, path: string): ComponentInstance {
    return {
      name: message.name,
      component: this.componentDefinition(message.component, appendJsonPath(path, 'component')),
      options: message.options.map(({ name, value }) => ({ name, value: fromValue(value) })),
      resource: message.resource === undefined ? null : this.resourceInstance(message.resource, appendJsonPath(path, 'resource')),
      skill: message.skill === undefined ? null : this.skill(message.skill, appendJsonPath(path, 'skill')),
      skillConfiguration: {
        inputs: fromStruct(message.skillConfiguration?.inputs),
        outputs: fromStruct(message.skillConfiguration?.outputs),
      },
    };
  }

  componentDefinition(message: ComponentDefinitionMessage | undefined, path: string): ComponentDefinition {
    if (message === undefined) return this.missing(path, MISSING_COMPONENT_DEFINITION);
    return {
      qualifiedName: message.qualifiedName,
      name: message.name,
      type: this.enumName(componentTypes, message.type, appendJsonPath(path, 'type'), 'SOURCE'),
      state: this.enumName(componentStates, message.state, appendJsonPath(path, 'state'), 'AVAILABLE'),
      inputType: message.inputType,
      outputType: message.outputType,
      options: message.options.map((option, i) => this.optionDefinition(option, `${appendJsonPath(path, 'options')}[${i}]`)),
      resource: message.resource === '' ? null : message.resource,
      capabilityQualifiedName: message.capabilityQualifiedName ?? null,
      experimental: message.experimental ?? null,
      dryRunSupported: message.dryRunSupported,
    };
  }

  optionDefinition(message: OptionDefinitionMessage, path: string): OptionDefinition {
    return {
      group: message.group,
      name: message.name,
      type: this.enumName(optionTypes, message.type, appendJsonPath(path, 'type'), 'STRING'),
      label: message.label,
      required: message.required,
      defaultValue: fromValue(message.defaultValue),
      overridable: message.overridable,
    };
  }

  resourceInstance(message: ResourceInstanceMessage, path: string): ResourceInstance {
    return {
      name: message.name,
      resource: this.resourceDefinition(message.resource, appendJsonPath(path, 'resource')),
      parameters: fromStruct(message.parameters),
    };
  }

  resourceDefinition(message: ResourceDefinitionMessage | undefined, path: string): ResourceDefinition {
    if (message === undefined) return this.missing(path, MISSING_RESOURCE_DEFINITION);
    return {
      qualifiedName: message.qualifiedName,
      name: message.name,
      parameters: message.parameters.map(({ name, type, required }, i) => ({
        name,
        type: this.enumName(parameterTypes, type, `${appendJsonPath(path, 'parameters')}[${i}].type`, 'STRING'),
        required,
      })),
      group: message.group,
      experimental: message.experimental,
    };
  }

  skill(message: SkillMessage, path: string): Skill {
    const skill: Skill = { name: message.name, url: message.url };
    if (message.capability !== SkillCapability.SKILL_CAPABILITY_UNSPECIFIED) {
      skill.capability = this.enumName(skillCapabilities, message.capability, appendJsonPath(path, 'capability'), 'ENTITY_EXTRACTION');
    }
    if (message.pipeline !== '') skill.pipeline = message.pipeline;
    if (message.version !== '') skill.version = message.version;
    if (message.parameters !== undefined) skill.parameters = fromStruct(message.parameters);
    return skill;
  }

  private missing<T>(field: string, placeholder: T): T {
    this.violations.push({ field, description: 'required field is missing', reason: 'MISSING_FIELD' });
    return placeholder;
  }
}

// google.protobuf.Value surfaces as `any`; a Value that is not set reads as null
function fromValue(value: unknown): unknown {
  return value === undefined ? null : value;
}

function fromStruct(struct: { [key: string]: unknown } | undefined): Record<string, unknown> {
  return struct === undefined ? {} : { ...struct };
}

const enumNames = new WeakMap<object, Map<number, string>>();

/** Number → name of an enum table, built once per table. */
function namesOf(table: Record<string, number>): Map<number, string> {
  let names = enumNames.get(table);
  if (names === undefined) {
    names = new Map(Object.entries(table).map(([name, number]) => [number, name]));
    enumNames.set(table, names);
  }
  return names;
}
