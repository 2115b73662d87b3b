import { readdirSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import {
  COMPONENT_KINDS,
  type CompactWorkflow,
  componentCatalog,
  componentInstance,
  compactWorkflowJsonSchema,
  derivedInstanceName,
  derivedUuid,
  findComponentDefinition,
  findResourceDefinition,
  instanceNamed,
  type OptionDefinition,
  parseCompactWorkflowText,
  parseWorkflowJson,
  plainInstanceName,
  readWorkflowText,
  RESOURCE_KINDS,
  serializeCompactWorkflow,
  serializeWorkflowJson,
  uuidV5,
  ValidationError,
  type WorkflowConfiguration,
  workflowToCompact,
} from '../src/index.js';
import { convertCompact } from '../src/compact-workflow.js';
import { checkAgainstSchema } from './json-schema-check.js';

const examples = new URL('../../../examples/', import.meta.url);
const exampleFiles = readdirSync(examples).filter((file) => /\.workflow\.(json|ya?ml)$/.test(file));
const readExample = (file: string): string => readFileSync(new URL(file, examples), 'utf8');

/** A workflow as it means the same: options at their catalog default dropped, definitions the catalog's. */
function normalised(workflow: WorkflowConfiguration): WorkflowConfiguration {
  return {
    ...workflow,
    components: workflow.components.map((component) => {
      const definition = findComponentDefinition(component.component.qualifiedName) ?? component.component;
      const options = component.options.filter(({ name, value }) => !isDefault(definition.options, name, value));
      return { ...component, component: definition, resource: component.resource ?? null, options };
    }),
  };
}

function isDefault(options: readonly OptionDefinition[], name: string, value: unknown): boolean {
  const option = options.find((candidate) => candidate.name === name);
  return option !== undefined && JSON.stringify(option.defaultValue) === JSON.stringify(value);
}

/** The violations a compact text is refused with, as `field: description`. */
function refusal(text: string): string[] {
  try {
    parseCompactWorkflowText(text);
  } catch (error) {
    if (error instanceof ValidationError) return error.violations.map((violation) => `${violation.field}: ${violation.description}`);
    throw error;
  }
  throw new Error('the text was accepted');
}

describe('derived names', () => {
  it('are RFC 9562 version 5 uuids', () => {
    // the RFC's own example: www.example.com in the DNS namespace
    expect(uuidV5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'www.example.com')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('depend on the workflow name without its uuid, the kind of thing and the plain name', () => {
    const uuid = derivedUuid('Text to graph', 'component', 'Documents');
    expect(derivedUuid('Text to graph_6f7a8b9c-0d1e-4f2a-9b3c-5d6e7f8a9b0c', 'component', 'Documents')).toBe(uuid);
    expect(derivedUuid('Text to graph', 'resource', 'Documents')).not.toBe(uuid);
    expect(derivedUuid('Other', 'component', 'Documents')).not.toBe(uuid);
    expect(derivedInstanceName('Text to graph', 'component', 'Documents')).toBe(`Documents_${uuid}`);
    expect(plainInstanceName('Text to graph', 'component', `Documents_${uuid}`)).toBe('Documents');
  });

  it('let a plain name stand for the one instance that has it', () => {
    const names = [
      'Documents_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
      'Twin_2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e',
      'Twin_3c4d5e6f-7a8b-4c9d-8e0f-2a3b4c5d6e7f',
      'Twin',
    ];
    expect(instanceNamed('Documents', names)).toBe(names[0]);
    expect(instanceNamed(names[1] as string, names)).toBe(names[1]);
    expect(instanceNamed('Twin', names)).toBe('Twin');
    expect(instanceNamed('Twin', names.slice(0, 3))).toBeUndefined();
    expect(instanceNamed('Nothing', names)).toBeUndefined();
  });

  it('keep a name that has a uuid of its own, both ways', () => {
    const own = 'Documents_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
    expect(derivedInstanceName('Text to graph', 'component', own)).toBe(own);
    expect(plainInstanceName('Text to graph', 'component', own)).toBe(own);
  });
});

describe.each(exampleFiles)('examples/%s', (file) => {
  const text = readExample(file);
  const { workflow, form } = readWorkflowText(text, file);

  it('round-trips: compact → full → compact gives the file, full → compact → full the workflow', () => {
    if (form === 'compact') expect(workflowToCompact(workflow)).toEqual(parse(text));
    const again = readWorkflowText(serializeCompactWorkflow(workflow), 'again.yaml').workflow;
    expect(normalised(again)).toEqual(normalised(workflow));
    expect(readWorkflowText(serializeCompactWorkflow(workflow, 'json'), 'again.json').workflow).toEqual(again);
  });

  it('is compact, except graph-import, the specification-form reference; its compact form validates against the schema', () => {
    expect(form).toBe(file === 'graph-import.workflow.json' ? 'full' : 'compact');
    expect(checkAgainstSchema(compactWorkflowJsonSchema(), parse(serializeCompactWorkflow(workflow)))).toEqual([]);
    if (form === 'compact') expect(checkAgainstSchema(compactWorkflowJsonSchema(), parse(text))).toEqual([]);
  });
});

/** A value of an option's type other than its default. */
function sampleValue(option: OptionDefinition, kind: string): unknown {
  if (option.type === 'COMPONENT_SELECTION_FAILURE_HANDLER') return derivedInstanceName('Every kind', 'component', 'Failures');
  if (option.name === 'target_resource') return derivedInstanceName('Every kind', 'resource', 'Graph');
  switch (option.type) {
    case 'BOOLEAN':
      return option.defaultValue !== true;
    case 'INTEGER':
      return 7;
    case 'NUMBER':
      return 0.5;
    case 'JSON':
      return { sample: [1, 'two'] };
    default:
      return `${kind} ${option.name}\nsecond line`;
  }
}

describe.each(componentCatalog().map((definition) => definition.qualifiedName))('component kind %s', (kind) => {
  const graph = {
    name: derivedInstanceName('Every kind', 'resource', 'Graph'),
    resource: findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE)!,
    parameters: { host: 'embedded', user: 'postgres', graph: 'every_kind', password: '$$AGE_PASSWORD' },
  };
  const definition = findComponentDefinition(kind)!;
  const options = Object.fromEntries(definition.options.map((option) => [option.name, sampleValue(option, kind)]));
  const component = {
    ...componentInstance(kind, derivedInstanceName('Every kind', 'component', 'Tried'), options),
    resource: definition.resource === null ? null : graph,
    skill: definition.capabilityQualifiedName === null ? null : { name: 'skill', url: 'http://127.0.0.1:1/v2/annotate', pipeline: 'default' },
    skillConfiguration:
      definition.capabilityQualifiedName === null ? { inputs: {}, outputs: {} } : { inputs: { text: 'text' }, outputs: { annotation: '_annotation' } },
  };
  const workflow: WorkflowConfiguration = {
    name: 'Every kind',
    autoStart: true,
    components: [component, componentInstance(COMPONENT_KINDS.LOGGER, derivedInstanceName('Every kind', 'component', 'Failures'), { level: 'warn' })],
    links: [{ from: component.name, to: derivedInstanceName('Every kind', 'component', 'Failures') }],
    resources: [graph],
    skills: [],
    workflowResources: [],
  };

  it('round-trips every option set away from its default, full → compact → full and compact → full → compact', () => {
    const compact = workflowToCompact(workflow);
    expect(convertCompact(compact).workflow).toEqual(workflow);
    expect(workflowToCompact(convertCompact(parse(serializeCompactWorkflow(workflow)) as CompactWorkflow).workflow)).toEqual(compact);
    expect(serializeWorkflowJson(parseCompactWorkflowTextUnchecked(serializeCompactWorkflow(workflow, 'json')))).toBe(serializeWorkflowJson(workflow));
  });

  it('writes plain names and references, and only the kind when nothing else is set', () => {
    const compact = workflowToCompact(workflow);
    expect(Object.keys(compact.components)).toEqual(['Tried', 'Failures']);
    expect(compact.links).toEqual(['Tried -> Failures']);
    expect(workflowToCompact({ ...workflow, components: [componentInstance(kind, 'Bare')], links: [] }).components).toEqual({
      Bare: kind.replace('loom.components.', ''),
    });
  });
});

function parseCompactWorkflowTextUnchecked(text: string): WorkflowConfiguration {
  return convertCompact(parse(text) as CompactWorkflow).workflow;
}

describe('reading a compact file', () => {
  const header = 'name: Errors\ncomponents:\n';

  it('names the compact field and its line in every violation', () => {
    const text = `${header}  In: source.Inlet\n  parse:\n    kind: processor.HttpEnricher\n    options:\n      url: http://example.org\n      max_retry: three\n  Out: sink.Loger\nlinks:\n  - In -> parse -> Out\n`;
    expect(refusal(text)).toEqual(["components.Out.kind: unknown component type 'sink.Loger': did you mean sink.Logger? (line 9)"]);
    expect(refusal(text.replace('sink.Loger', 'sink.Logger'))).toEqual([
      expect.stringMatching(/^components\.parse\.options\.max_retry: .*INTEGER.* \(line 8\)$/),
    ]);
  });

  it('repeats an unknown kind with the closest known one, or lists the known ones when none is close', () => {
    expect(refusal(`${header}  In: Inlte\n`)).toEqual(["components.In.kind: unknown component type 'Inlte': did you mean source.Inlet? (line 3)"]);
    expect(refusal(`${header}  In: loom.components.source.Inelt\n`)).toEqual([
      "components.In.kind: unknown component type 'loom.components.source.Inelt': did you mean source.Inlet? (line 3)",
    ]);
    expect(refusal(`${header}  In: frobnicator\n`)).toEqual([
      expect.stringMatching(/^components\.In\.kind: unknown component type 'frobnicator'; one of source\.Timer, .*sink\.Logger.* \(line 3\)$/),
    ]);
    expect(refusal(`name: x\nresources:\n  G: {kind: graph.Neo4jDatabse}\ncomponents: {In: source.Inlet}\n`)).toEqual([
      "resources.G.kind: unknown resource type 'graph.Neo4jDatabse': did you mean graph.Neo4jDatabase? (line 3)",
    ]);
  });

  it('names components by their plain names in what the catalog checks say', () => {
    expect(refusal(`${header}  In: source.Inlet\n  Out: sink.Logger\nlinks: [Out -> In]\n`)).toEqual([
      'links[0]: (Out -> In) links into In, an Inlet: a source takes no messages from links (line 5)',
      'links[0]: (Out -> In) links out of Out, a Logger: a sink sends no messages on (line 5)',
      'components.Out: Out is reached from no source: link it downstream of a source, or name it as a failure handler of a component that is (line 4)',
    ]);
  });

  it('lists every violation, each with its line', () => {
    const text = `${header}  In: source.Inlte\n  Log: sink.Loger\n  Out: sink.NatsPublisehr\nlinks: [In -> Log]\n`;
    expect(refusal(text)).toEqual([
      "components.In.kind: unknown component type 'source.Inlte': did you mean source.Inlet? (line 3)",
      "components.Log.kind: unknown component type 'sink.Loger': did you mean sink.Logger? (line 4)",
      "components.Out.kind: unknown component type 'sink.NatsPublisehr': did you mean sink.NatsPublisher? (line 5)",
    ]);
  });

  it('refuses unknown fields, unknown resources, and links that are no arrows, by field', () => {
    expect(refusal(`${header}  In: {kind: source.Inlet, option: {}}\n`)).toEqual(['components.In.option: unknown field (line 3)']);
    expect(refusal(`${header}  W: {kind: persistence.GraphDatabaseWriter, resource: Graph, options: {query: RETURN 1}}\n`)).toEqual([
      'components.W.resource: names no resource of the workflow (it defines none under resources) (line 3)',
    ]);
    expect(refusal(`${header}  In: source.Inlet\n  Out: sink.Logger\nlinks: [In Out]\n`)).toEqual([
      "links[0]: a link is 'from -> to' (or a chain 'a -> b -> c') (line 5)",
    ]);
    expect(refusal('name: x\ncomponents:\n  a: source.Inlet\n  a: sink.Logger\n')).toEqual([': malformed YAML at line 4, column 3: duplicate key']);
  });

  it('never quotes the text of a malformed file, which may hold a password', () => {
    const [problem] = refusal('name: x\nresources:\n  G: {kind: graph.Neo4jDatabase, parameters: {password: s3cret\ncomponents: {}\n');
    expect(problem).toMatch(/^: malformed YAML at line \d+, column \d+/);
    expect(problem).not.toContain('s3cret');
  });

  it('tells the forms apart by extension and content, and reads JSON errors as JSON', () => {
    const full = readExample('graph-import.workflow.json');
    expect(readWorkflowText(full, 'graph-import.workflow.json').form).toBe('full');
    expect(readWorkflowText(full, 'no-extension').form).toBe('full');
    expect(readWorkflowText(serializeCompactWorkflow(parseWorkflowJson(full), 'json'), 'x.json').form).toBe('compact');
    expect(() => readWorkflowText('{"name": "x",', 'x.json')).toThrow(/malformed JSON at line 1/);
    // a full file with a misspelt components is still told as a full file
    const misspelt = full.replace('"components":', '"component":');
    expect(() => readWorkflowText(misspelt, 'x.workflow.json')).toThrow(/^components: required field is missing/);
  });

  it('resolves failure handlers and target resources by plain name, and keeps $$VARIABLES and sealed values', () => {
    const workflow = parseCompactWorkflowText(
      'name: Refs\nresources:\n  G: {kind: graph.Neo4jDatabase, parameters: {host: h, user: u, password: $$PW}}\n' +
        'components:\n  In: source.Inlet\n  W: {kind: persistence.GraphDatabaseWriter, resource: G, options: {query: RETURN 1, failure_handler: F}}\n  F: sink.Logger\n' +
        'links: [In -> W]\n',
    );
    expect(workflow.components[1]?.options).toEqual([
      { name: 'query', value: 'RETURN 1' },
      { name: 'failure_handler', value: derivedInstanceName('Refs', 'component', 'F') },
    ]);
    expect(workflow.components[1]?.resource).toEqual(workflow.resources[0]);
    expect(workflow.resources[0]?.parameters['password']).toBe('$$PW');
  });
});
