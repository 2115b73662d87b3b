import { describe, expect, it } from 'vitest';
import { ValidationError } from '@loom/foundation';
import { sampleWorkflow } from '../test/sample-workflow.js';
import { fieldsThrownBy, type LooseJson, violationLinesThrownBy, violationsThrownBy } from '../test/violations.js';
import type { Schedule } from './workflow.js';
import { MAX_VALUE_DEPTH } from './workflow-schema.js';
import { parseSchedule, parseScheduleJson, parseWorkflow, parseWorkflowJson, serializeScheduleJson, serializeWorkflowJson } from './workflow-json.js';

// a JSON copy to mutate: what a file would hold
function sampleJson(): LooseJson {
  return JSON.parse(serializeWorkflowJson(sampleWorkflow()));
}

describe('parseWorkflow / serializeWorkflowJson', () => {
  it('round-trips: parse(serialize(w)) deep-equals w', () => {
    const workflow = sampleWorkflow();
    expect(parseWorkflowJson(serializeWorkflowJson(workflow))).toStrictEqual(workflow);
  });

  it('writes 2-space indented JSON with a final newline and keys in the order of the specification', () => {
    const text = serializeWorkflowJson(sampleWorkflow());
    expect(text.endsWith('}\n')).toBe(true);
    expect(text.startsWith('{\n  "name": ')).toBe(true);
    const value: LooseJson = JSON.parse(text);
    expect(Object.keys(value as object)).toEqual(['name', 'autoStart', 'components', 'links', 'resources', 'skills', 'workflowResources']);
    const instance: LooseJson = value.components[0];
    expect(Object.keys(instance as object)).toEqual(['name', 'component', 'options', 'resource', 'skill', 'skillConfiguration']);
    expect(Object.keys(instance.component as object)).toEqual([
      'qualifiedName',
      'name',
      'type',
      'state',
      'inputType',
      'outputType',
      'options',
      'resource',
      'capabilityQualifiedName',
      'experimental',
      'dryRunSupported',
    ]);
    expect(Object.keys(instance.component.options[0] as object)).toEqual(['group', 'name', 'type', 'label', 'required', 'defaultValue', 'overridable']);
    expect(Object.keys(instance.skillConfiguration as object)).toEqual(['outputs', 'inputs']);
    expect(Object.keys(value.resources[0] as object)).toEqual(['name', 'resource', 'parameters']);
    expect(Object.keys(value.resources[0].resource as object)).toEqual(['qualifiedName', 'name', 'parameters', 'group', 'experimental']);
  });

  it('does not depend on the key order of the input', () => {
    const workflow = sampleWorkflow();
    const { workflowResources, skills, links, resources, components, autoStart, name } = workflow;
    const shuffled = { workflowResources, skills, links, resources, components, autoStart, name };
    expect(serializeWorkflowJson(shuffled)).toBe(serializeWorkflowJson(workflow));
  });

  it('keeps the order of free-form objects (parameters, option values, skill mappings)', () => {
    const text = serializeWorkflowJson(sampleWorkflow());
    expect(text.indexOf('"entities": "_entities"')).toBeLessThan(text.indexOf('"annotation": "_annotation"'));
  });

  it('accepts empty links, null skill, null or missing resource, null capability and experimental', () => {
    const json = sampleJson();
    json['links'] = [];
    delete json['components'][0].resource;
    const workflow = parseWorkflow(json);
    expect(workflow.links).toEqual([]);
    expect(workflow.components[0]!.resource).toBeNull();
    expect(workflow.components[1]!.skill).toBeNull();
    expect(workflow.components[1]!.component.capabilityQualifiedName).toBeNull();
    expect(workflow.components[0]!.component.experimental).toBeNull();
  });

  it('writes an absent component resource as null', () => {
    const workflow = sampleWorkflow();
    delete workflow.components[0]!.resource;
    const json: LooseJson = JSON.parse(serializeWorkflowJson(workflow));
    expect(json.components[0]).toHaveProperty('resource', null);
  });

  it('omits absent optional skill fields', () => {
    const json: LooseJson = JSON.parse(serializeWorkflowJson(sampleWorkflow()));
    expect(json.skills[2]).toStrictEqual({ name: 'pdf', url: 'http://localhost:8089' });
  });
});

describe('parseWorkflow violations', () => {
  it('names a wrong type by its field', () => {
    const json = sampleJson();
    json['autoStart'] = 'yes';
    expect(violationsThrownBy(() => parseWorkflow(json))).toEqual([
      { field: 'autoStart', description: 'expected a boolean, got a string', reason: 'WRONG_TYPE' },
    ]);
  });

  it('names a missing option name by its JSON path', () => {
    const json = sampleJson();
    delete json['components'][1].options[0].name;
    expect(violationsThrownBy(() => parseWorkflow(json))).toEqual([
      { field: 'components[1].options[0].name', description: 'required field is missing', reason: 'MISSING_FIELD' },
    ]);
  });

  it('lists every violation at once', () => {
    const json = sampleJson();
    delete json['components'][0].component.qualifiedName;
    json['components'][0].component.type = 'WRITER';
    json['components'][1].component.options[0].required = 'true';
    json['resources'][0].resource.parameters[1].type = 'SECRET';
    json['links'][0].to = 7;
    delete json['skills'];
    expect(violationLinesThrownBy(() => parseWorkflow(json))).toEqual([
      'components[0].component.qualifiedName: required field is missing (MISSING_FIELD)',
      'components[0].component.type: must be one of SOURCE, PROCESSOR, SKILL, PERSISTENCE, DATA_SCIENCE, SINK (INVALID_VALUE)',
      'components[1].component.options[0].required: expected a boolean, got a string (WRONG_TYPE)',
      'links[0].to: expected a string, got an integer (WRONG_TYPE)',
      'resources[0].resource.parameters[1].type: must be one of STRING, INTEGER, BOOLEAN, PASSWORD (INVALID_VALUE)',
      'skills: required field is missing (MISSING_FIELD)',
    ]);
  });

  it('never quotes a wrong value (it may be a password)', () => {
    const json = sampleJson();
    json['resources'][0].name = { password: 's3cret' };
    const error = (() => {
      try {
        parseWorkflow(json);
      } catch (caught) {
        return caught as ValidationError;
      }
      throw new Error('expected a ValidationError');
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.kind).toBe('invalid-argument');
    expect(JSON.stringify(error.violations) + error.message).not.toContain('s3cret');
  });

  it('requires the keys that may be null: defaultValue, option value, capabilityQualifiedName, experimental, skill', () => {
    const json = sampleJson();
    delete json['components'][1].component.options[1].defaultValue;
    delete json['components'][1].options[1].value;
    delete json['components'][1].component.capabilityQualifiedName;
    delete json['components'][1].component.experimental;
    delete json['components'][1].skill;
    expect(fieldsThrownBy(() => parseWorkflow(json))).toEqual([
      'components[1].component.options[1].defaultValue',
      'components[1].component.capabilityQualifiedName',
      'components[1].component.experimental',
      'components[1].options[1].value',
      'components[1].skill',
    ]);
  });

  it('rejects a non-object document', () => {
    expect(violationsThrownBy(() => parseWorkflow([]))).toEqual([{ field: '', description: 'expected an object, got an array', reason: 'WRONG_TYPE' }]);
    expect(fieldsThrownBy(() => parseWorkflowJson('null'))).toEqual(['']);
  });

  it('reports malformed JSON with field "" and the position', () => {
    expect(violationsThrownBy(() => parseWorkflowJson('{"name": "x",\n"autoStart": tru}'))).toEqual([
      { field: '', description: 'malformed JSON at line 2, column 14 (position 27): unknown literal (expected true, false or null)', reason: 'MALFORMED_JSON' },
    ]);
  });
});

describe('unknown fields', () => {
  it('allow "$schema" at the top level for editors, and drop it', () => {
    const json = sampleJson();
    json['$schema'] = '../libs/domain/schema/workflow.schema.json';
    const parsed = parseWorkflow(json);
    expect(parsed).toStrictEqual(sampleWorkflow());
    expect(serializeWorkflowJson(parsed)).not.toContain('$schema');
  });

  it('are violations at the top level and in everything a user writes, one per field', () => {
    const json = sampleJson();
    json['autostart'] = true;
    json['description'] = 'typo protection';
    json['components'][0].optoins = [];
    json['components'][0].options[0].valeu = 1;
    json['components'][0].skill.urll = 'x';
    json['components'][0].skillConfiguration.extra = {};
    json['links'][0].kind = 'data';
    json['resources'][0].param = {};
    json['skills'][1]['my key'] = 1;
    expect(violationsThrownBy(() => parseWorkflow(json))).toEqual(
      [
        'components[0].options[0].valeu',
        'components[0].skill.urll',
        'components[0].skillConfiguration.extra',
        'components[0].optoins',
        'links[0].kind',
        'resources[0].param',
        'skills[1]["my key"]',
        'autostart',
        'description',
      ].map((field) => ({ field, description: 'unknown field', reason: 'UNKNOWN_FIELD' })),
    );
  });

  it('are tolerated and dropped inside component, option, resource and parameter definitions', () => {
    const json = sampleJson();
    json['components'][0].component.icon = 'brain.svg';
    json['components'][0].component.options[0].help = 'JSON mapping';
    json['resources'][0].resource.description = 'Neo4j over Bolt';
    json['resources'][0].resource.parameters[0].secret = false;
    const workflow = parseWorkflow(json);
    expect(workflow).toStrictEqual(sampleWorkflow());
    expect(serializeWorkflowJson(workflow)).not.toMatch(/icon|help|Bolt|secret/);
  });

  it('are not checked inside free-form objects', () => {
    const json = sampleJson();
    json['resources'][0].parameters.anything = { deep: [1] };
    json['components'][0].skillConfiguration.inputs.more = 'body.more';
    expect(parseWorkflow(json).resources[0]!.parameters['anything']).toEqual({ deep: [1] });
  });
});

describe('JSON values', () => {
  it('rejects values no JSON file can hold, naming where they are', () => {
    const json = sampleJson();
    json['components'][0].options[0].value = { list: [1, undefined] };
    json['components'][0].component.options[0].defaultValue = Number.NaN;
    json['resources'][0].parameters.when = new Date(0);
    json['skills'][1].parameters.fn = () => 1;
    expect(violationLinesThrownBy(() => parseWorkflow(json))).toEqual([
      'components[0].component.options[0].defaultValue: not a JSON value: a number must be finite (NOT_JSON)',
      'components[0].options[0].value.list[1]: not a JSON value: undefined (NOT_JSON)',
      'resources[0].parameters.when: not a JSON value: not a plain object (NOT_JSON)',
      'skills[1].parameters.fn: not a JSON value: function (NOT_JSON)',
    ]);
  });

  it('rejects values nested deeper than MAX_VALUE_DEPTH (they could not cross gRPC)', () => {
    const json = sampleJson();
    let value: unknown = 1;
    for (let i = 0; i <= MAX_VALUE_DEPTH; i++) value = [value];
    json['resources'][0].parameters.deep = value;
    expect(violationsThrownBy(() => parseWorkflow(json))).toEqual([
      { field: `resources[0].parameters.deep${'[0]'.repeat(MAX_VALUE_DEPTH)}`, description: 'nested deeper than 24 levels', reason: 'TOO_DEEP' },
    ]);
  });

  it('survives hostile nesting without exhausting the stack', () => {
    const text = serializeWorkflowJson(sampleWorkflow()).replace('"host": "localhost"', `"host": ${'['.repeat(200_000)}${']'.repeat(200_000)}`);
    expect(violationsThrownBy(() => parseWorkflowJson(text))[0]?.reason).toBe('TOO_DEEP');
  });

  it('rejects a value that contains itself', () => {
    const json = sampleJson();
    const loop: Record<string, unknown> = {};
    loop['self'] = loop;
    json['components'][0].options[0].value = loop;
    expect(fieldsThrownBy(() => parseWorkflow(json))).toEqual(['components[0].options[0].value.self']);
  });

  it('rejects __proto__ keys, which would otherwise vanish silently', () => {
    const text = serializeWorkflowJson(sampleWorkflow()).replace('"host": "localhost"', '"__proto__": {"x": 1}');
    expect(fieldsThrownBy(() => parseWorkflowJson(text))).toEqual(['components[1].resource.parameters.__proto__']);
    const nested = serializeWorkflowJson(sampleWorkflow()).replace('"nested": {', '"nested": {"__proto__": 1, ');
    expect(fieldsThrownBy(() => parseWorkflowJson(nested))).toEqual(['components[0].options[0].value.nested.__proto__']);
  });
});

describe('schedules', () => {
  const schedule: Schedule = { enabled: true, cron: '0 */5 * * * *', timezone: 'Europe/Berlin', overlap: 'SKIP', catchUp: 'LATEST' };

  it('round-trips with keys in the documented order', () => {
    const text = serializeScheduleJson({ catchUp: 'LATEST', overlap: 'SKIP', timezone: 'Europe/Berlin', cron: '0 */5 * * * *', enabled: true });
    expect(text).toBe('{\n  "enabled": true,\n  "cron": "0 */5 * * * *",\n  "timezone": "Europe/Berlin",\n  "overlap": "SKIP",\n  "catchUp": "LATEST"\n}\n');
    expect(parseScheduleJson(text)).toStrictEqual(schedule);
  });

  it('names each violation', () => {
    expect(violationLinesThrownBy(() => parseSchedule({ enabled: 'yes', cron: '', overlap: 'SOMETIMES', catchUp: 'ALL', tz: 'UTC' }))).toEqual([
      'enabled: expected a boolean, got a string (WRONG_TYPE)',
      'cron: must not be empty (INVALID_VALUE)',
      'timezone: required field is missing (MISSING_FIELD)',
      'overlap: must be one of SKIP, QUEUE, ALLOW (INVALID_VALUE)',
      'tz: unknown field (UNKNOWN_FIELD)',
    ]);
  });

  it('reports malformed JSON', () => {
    expect(fieldsThrownBy(() => parseScheduleJson('{"enabled": true'))).toEqual(['']);
  });
});
