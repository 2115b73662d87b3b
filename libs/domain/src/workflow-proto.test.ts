import {
  CatchUpPolicy,
  ComponentState,
  ComponentType,
  OptionType,
  OverlapPolicy,
  ParameterType,
  Schedule as ScheduleMessage,
  SkillCapability,
  Workflow as WorkflowMessage,
} from '@loom/contracts';
import { describe, expect, it } from 'vitest';
import { sampleWorkflow } from '../test/sample-workflow.js';
import { violationLinesThrownBy, violationsThrownBy } from '../test/violations.js';
import type { Schedule, WorkflowConfiguration } from './workflow.js';
import { parseWorkflow, parseWorkflowJson, serializeWorkflowJson } from './workflow-json.js';
import { MAX_VALUE_DEPTH } from './workflow-schema.js';
import { scheduleFromProto, scheduleToProto, workflowFromProto, workflowToProto } from './workflow-proto.js';

function overTheWire(workflow: WorkflowConfiguration): WorkflowConfiguration {
  return workflowFromProto(WorkflowMessage.decode(WorkflowMessage.encode(workflowToProto(workflow)).finish()));
}

describe('workflowToProto / workflowFromProto', () => {
  it('maps enum names to the numeric enums', () => {
    const message = workflowToProto(sampleWorkflow());
    const [skill, writer] = message.components;
    expect(skill?.component?.type).toBe(ComponentType.COMPONENT_TYPE_SKILL);
    expect(writer?.component?.type).toBe(ComponentType.COMPONENT_TYPE_PERSISTENCE);
    expect(writer?.component?.state).toBe(ComponentState.COMPONENT_STATE_DISABLED);
    expect(writer?.component?.options.map((option) => option.type)).toEqual([
      OptionType.OPTION_TYPE_BOOLEAN,
      OptionType.OPTION_TYPE_COMPONENT_SELECTION_FAILURE_HANDLER,
    ]);
    expect(message.resources[0]?.resource?.parameters.map((parameter) => parameter.type)).toEqual([
      ParameterType.PARAMETER_TYPE_STRING,
      ParameterType.PARAMETER_TYPE_PASSWORD,
    ]);
    expect(message.skills.map((s) => s.capability)).toEqual([
      SkillCapability.SKILL_CAPABILITY_ENTITY_EXTRACTION,
      SkillCapability.SKILL_CAPABILITY_UNSPECIFIED,
      SkillCapability.SKILL_CAPABILITY_UNSPECIFIED,
    ]);
  });

  it('maps nulls to absent fields', () => {
    const [skill, writer] = workflowToProto(sampleWorkflow()).components;
    expect(skill?.skill).toBeDefined();
    expect(skill?.resource).toBeUndefined();
    expect(skill?.component?.resource).toBe('');
    expect(skill?.component?.experimental).toBeUndefined();
    expect(writer?.skill).toBeUndefined();
    expect(writer?.component?.capabilityQualifiedName).toBeUndefined();
    expect(writer?.component?.options[1]?.defaultValue).toBeNull();
  });

  it('survives binary encoding unchanged', () => {
    const workflow = sampleWorkflow();
    expect(overTheWire(workflow)).toStrictEqual(workflow);
  });

  it('gives back the same file after a trip through proto', () => {
    const text = serializeWorkflowJson(sampleWorkflow());
    expect(serializeWorkflowJson(overTheWire(parseWorkflowJson(text)))).toBe(text);
  });

  it('reads an absent component resource back as null, and a blank skill version as absent', () => {
    const workflow = sampleWorkflow();
    delete workflow.components[0]!.resource;
    workflow.skills[0]!.version = '';
    const back = overTheWire(workflow);
    expect(back.components[0]!.resource).toBeNull();
    expect(back.skills[0]).not.toHaveProperty('version');
  });

  it('reads unset messages as empty values', () => {
    const back = workflowFromProto(
      WorkflowMessage.fromPartial({
        name: 'w',
        components: [
          {
            name: 'c',
            component: {
              type: ComponentType.COMPONENT_TYPE_SOURCE,
              state: ComponentState.COMPONENT_STATE_AVAILABLE,
              options: [{ type: OptionType.OPTION_TYPE_TEXT }],
            },
            options: [{ name: 'o' }],
          },
        ],
        resources: [{ name: 'r', resource: {} }],
      }),
    );
    const [component] = back.components;
    expect(component?.skillConfiguration).toStrictEqual({ inputs: {}, outputs: {} });
    expect(component?.options).toStrictEqual([{ name: 'o', value: null }]);
    expect(component?.component.options[0]?.defaultValue).toBeNull();
    expect(back.resources[0]?.parameters).toStrictEqual({});
  });

  it('names every UNSPECIFIED or unknown enum and every missing definition by JSON path', () => {
    const message = workflowToProto(sampleWorkflow());
    message.components[0]!.component!.type = ComponentType.COMPONENT_TYPE_UNSPECIFIED;
    message.components[1]!.component!.state = ComponentState.COMPONENT_STATE_UNSPECIFIED;
    message.components[1]!.component!.options[1]!.type = 99 as OptionType;
    message.components[1]!.resource!.resource!.parameters[0]!.type = ParameterType.PARAMETER_TYPE_UNSPECIFIED;
    message.workflowResources[0]!.resource = undefined;
    message.skills[0]!.capability = SkillCapability.UNRECOGNIZED;
    message.components.push({ name: 'bare', options: [] });
    const decoded = WorkflowMessage.decode(WorkflowMessage.encode(message).finish());
    expect(violationLinesThrownBy(() => workflowFromProto(decoded))).toEqual([
      'components[0].component.type: is unspecified (MISSING_FIELD)',
      'components[1].component.state: is unspecified (MISSING_FIELD)',
      'components[1].component.options[1].type: unknown enum value 99 (INVALID_VALUE)',
      'components[1].resource.resource.parameters[0].type: is unspecified (MISSING_FIELD)',
      'components[2].component: required field is missing (MISSING_FIELD)',
      'skills[0].capability: unknown enum value -1 (INVALID_VALUE)',
      'workflowResources[0].resource: required field is missing (MISSING_FIELD)',
    ]);
  });

  it('carries free-form values nested as deep as the parser allows, in every place they occur', () => {
    const nest = (kind: 'array' | 'object'): unknown => {
      let value: unknown = 'leaf';
      for (let i = 0; i < MAX_VALUE_DEPTH; i++) value = kind === 'array' ? [value] : { k: value };
      return value;
    };
    for (const kind of ['array', 'object'] as const) {
      const workflow = sampleWorkflow();
      const [skill, writer] = workflow.components;
      skill!.options[0]!.value = nest(kind);
      skill!.component.options[0]!.defaultValue = nest(kind);
      skill!.skill!.parameters = { deep: nest(kind) };
      skill!.skillConfiguration.inputs['deep'] = nest(kind);
      writer!.resource!.parameters['deep'] = nest(kind);
      workflow.workflowResources[0]!.parameters['deep'] = nest(kind);
      expect(parseWorkflow(workflow)).toStrictEqual(workflow);
      expect(overTheWire(workflow)).toStrictEqual(workflow);
    }
  });

  it('names values no JSON file can hold', () => {
    const message = workflowToProto(sampleWorkflow());
    message.components[0]!.options[0]!.value = { ratio: Number.NaN };
    const decoded = WorkflowMessage.decode(WorkflowMessage.encode(message).finish());
    expect(violationsThrownBy(() => workflowFromProto(decoded))).toEqual([
      { field: 'components[0].options[0].value.ratio', description: 'not a JSON value: a number must be finite', reason: 'NOT_JSON' },
    ]);
  });
});

describe('scheduleToProto / scheduleFromProto', () => {
  const schedule: Schedule = { enabled: true, cron: '0 0 * * * *', timezone: 'UTC', overlap: 'QUEUE', catchUp: 'ALL' };

  it('round-trips through binary encoding', () => {
    const message = scheduleToProto(schedule);
    expect(message).toStrictEqual({
      enabled: true,
      cron: '0 0 * * * *',
      timezone: 'UTC',
      overlap: OverlapPolicy.OVERLAP_POLICY_QUEUE,
      catchUp: CatchUpPolicy.CATCH_UP_POLICY_ALL,
    });
    expect(scheduleFromProto(ScheduleMessage.decode(ScheduleMessage.encode(message).finish()))).toStrictEqual(schedule);
  });

  it('names UNSPECIFIED policies', () => {
    expect(violationLinesThrownBy(() => scheduleFromProto(ScheduleMessage.fromPartial({ enabled: true, cron: '* * * * * *' })))).toEqual([
      'overlap: is unspecified (MISSING_FIELD)',
      'catchUp: is unspecified (MISSING_FIELD)',
    ]);
  });
});
