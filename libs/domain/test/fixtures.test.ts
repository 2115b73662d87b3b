import { readdirSync, readFileSync } from 'node:fs';
import { Workflow as WorkflowMessage } from '@loom/contracts';
import { describe, expect, it } from 'vitest';
import {
  findComponentDefinition,
  findResourceDefinition,
  forEachResourceParameter,
  RESOURCE_KINDS,
  parseScheduleJson,
  parseWorkflowJson,
  scheduleJsonSchema,
  secretReference,
  serializeScheduleJson,
  serializeWorkflowJson,
  workflowJsonSchema,
  validateWorkflow,
} from '../src/index.js';
import { scheduleFromProto, scheduleToProto, workflowFromProto, workflowToProto } from '../src/workflow-proto.js';
import { checkAgainstSchema } from './json-schema-check.js';
import { fieldsThrownBy, type LooseJson } from './violations.js';

const fixtures = new URL('./fixtures/', import.meta.url);
const read = (file: string): string => readFileSync(new URL(file, fixtures), 'utf8');
const workflowFiles = readdirSync(fixtures).filter((file) => file.endsWith('.workflow.json'));
const scheduleFiles = readdirSync(fixtures).filter((file) => file.endsWith('.scheduler.json'));

describe.each(workflowFiles)('fixture %s', (file) => {
  const text = read(file);

  it('is in canonical form: serialize(parse(text)) is the text, byte for byte', () => {
    expect(serializeWorkflowJson(parseWorkflowJson(text))).toBe(text);
  });

  it('survives JSON → domain → proto → binary → domain → JSON unchanged', () => {
    const bytes = WorkflowMessage.encode(workflowToProto(parseWorkflowJson(text))).finish();
    expect(serializeWorkflowJson(workflowFromProto(WorkflowMessage.decode(bytes)))).toBe(text);
  });

  it('conforms to the published JSON Schema', () => {
    expect(checkAgainstSchema(workflowJsonSchema(), JSON.parse(text))).toEqual([]);
  });
});

describe.each(scheduleFiles)('fixture %s', (file) => {
  const text = read(file);

  it('is in canonical form and survives proto', () => {
    const schedule = parseScheduleJson(text);
    expect(serializeScheduleJson(schedule)).toBe(text);
    expect(scheduleFromProto(scheduleToProto(schedule))).toStrictEqual(schedule);
  });

  it('conforms to the published JSON Schema', () => {
    expect(checkAgainstSchema(scheduleJsonSchema(), JSON.parse(text))).toEqual([]);
  });
});

describe('graph-writer.workflow.json', () => {
  const workflow = parseWorkflowJson(read('graph-writer.workflow.json'));
  const writer = workflow.components.find((component) => component.component.qualifiedName === 'loom.components.persistence.GraphDatabaseWriter');

  it('has a source linked to a graph database writer', () => {
    const [source] = workflow.components;
    expect(source?.component.type).toBe('SOURCE');
    expect(writer?.component.type).toBe('PERSISTENCE');
    expect(workflow.links).toEqual([{ from: source?.name, to: writer?.name }]);
    expect(workflow.name).toMatch(/^.+_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('is valid, and the definitions copied into it are those of the catalog', () => {
    expect(() => validateWorkflow(workflow)).not.toThrow();
    for (const component of workflow.components) expect(component.component).toStrictEqual(findComponentDefinition(component.component.qualifiedName));
    const resources = [...workflow.resources, ...workflow.workflowResources, ...workflow.components.flatMap((component) => component.resource ?? [])];
    for (const resource of resources) expect(resource.resource).toStrictEqual(findResourceDefinition(resource.resource.qualifiedName));
  });

  it('uses a Neo4j resource whose password references an ecosystem variable', () => {
    // the definitions' own tables are checked once, in src/catalog.test.ts; the fixture copies them (test above)
    expect(writer?.resource?.resource.qualifiedName).toBe(RESOURCE_KINDS.NEO4J_DATABASE);
    const references: string[] = [];
    forEachResourceParameter(workflow, (path, _resource, _name, value) => {
      const variable = secretReference(value);
      if (variable !== undefined) references.push(`${path} → ${variable}`);
    });
    expect(references).toEqual(['resources[0].parameters.password → NEO4J_PASSWORD', 'components[1].resource.parameters.password → NEO4J_PASSWORD']);
  });
});

describe('the published schema and the parser agree', () => {
  const base = (): LooseJson => JSON.parse(read('graph-writer.workflow.json'));
  const cases: [string, (json: LooseJson) => void, string][] = [
    ['an unknown top-level field', (json) => (json.autostart = true), 'autostart'],
    ['autoStart "yes"', (json) => (json.autoStart = 'yes'), 'autoStart'],
    ['an option without a name', (json) => delete json.components[1].options[0].name, 'components[1].options[0].name'],
    ['an unknown component type', (json) => (json.components[0].component.type = 'WRITER'), 'components[0].component.type'],
    ['a link without to', (json) => delete json.links[0].to, 'links[0].to'],
    ['an unknown field in a resource instance', (json) => (json.resources[0].secret = 1), 'resources[0].secret'],
  ];

  it.each(cases)('both reject %s', (_what, breakIt, field) => {
    const json = base();
    breakIt(json);
    expect(fieldsThrownBy(() => parseWorkflowJson(JSON.stringify(json)))).toEqual([field]);
    expect(checkAgainstSchema(workflowJsonSchema(), json)).not.toEqual([]);
  });

  it('both accept a missing component resource and unknown fields inside definitions', () => {
    const json = base();
    delete json.components[0].resource;
    json.components[1].component.icon = 'writer.svg';
    json.resources[0].resource.parameters[0].hint = 'host name';
    expect(() => parseWorkflowJson(JSON.stringify(json))).not.toThrow();
    expect(checkAgainstSchema(workflowJsonSchema(), json)).toEqual([]);
  });
});
