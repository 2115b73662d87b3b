import { describe, expect, it } from 'vitest';
import {
  catalogFor,
  COMPONENT_KINDS,
  componentCatalog,
  findComponentDefinition,
  findResourceDefinition,
  GRAPH_DATABASE_RESOURCE,
  isGraphSsoResource,
  optionConstraint,
  parameterConstraint,
  RESOURCE_KINDS,
  resourceCatalog,
  resourceSatisfies,
  SKILL_CAPABILITY_QUALIFIED_NAMES,
} from './catalog.js';
import { COMPONENT_TYPES, type OptionTypeName, PARAMETER_TYPES } from './workflow.js';

const FAILURE_HANDLING = ['max_retry', 'delay', 'store_error_content', 'store_message_content', 'failure_handler'];

function hasType(type: OptionTypeName, value: unknown): boolean {
  const byType: Record<OptionTypeName, (v: unknown) => boolean> = {
    BOOLEAN: (v) => typeof v === 'boolean',
    INTEGER: (v) => Number.isSafeInteger(v),
    NUMBER: (v) => typeof v === 'number' && Number.isFinite(v),
    STRING: (v) => typeof v === 'string',
    TEXT: (v) => typeof v === 'string',
    SCRIPT: (v) => typeof v === 'string',
    JSON: () => true,
    COMPONENT_SELECTION_FAILURE_HANDLER: (v) => v === null || typeof v === 'string',
  };
  return byType[type](value);
}

describe('the graph database writer', () => {
  it("has the specification's options in its order, with its types, groups, required flags and defaults, then the query and provenance", () => {
    const writer = findComponentDefinition(COMPONENT_KINDS.GRAPH_DATABASE_WRITER);
    expect(writer?.type).toBe('PERSISTENCE');
    expect(writer?.state).toBe('AVAILABLE');
    expect(writer?.resource).toBe(GRAPH_DATABASE_RESOURCE);
    expect(writer?.dryRunSupported).toBe(false);
    expect(writer?.options.map(({ name, type, group, required, defaultValue }) => [name, type, group, required, defaultValue])).toStrictEqual([
      ['stream_records', 'BOOLEAN', 'Main', true, false],
      ['batch_writes', 'BOOLEAN', 'Advanced', false, false],
      ['batch_size', 'INTEGER', 'Advanced', false, 20],
      ['aggregation_timeout', 'INTEGER', 'Advanced', false, 300],
      ['max_retry', 'INTEGER', 'Advanced', false, 0],
      ['delay', 'INTEGER', 'Advanced', false, 0],
      ['store_error_content', 'BOOLEAN', 'Main', true, true],
      ['store_message_content', 'BOOLEAN', 'Main', true, true],
      ['failure_handler', 'COMPONENT_SELECTION_FAILURE_HANDLER', 'Failure Handling', false, null],
      ['query', 'TEXT', 'Main', true, null],
      ['provenance', 'BOOLEAN', 'Advanced', false, false],
    ]);
  });
});

describe('the Neo4j resource', () => {
  it("has the specification's parameters in its order", () => {
    const neo4j = findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE);
    expect(neo4j).toStrictEqual({
      qualifiedName: RESOURCE_KINDS.NEO4J_DATABASE,
      name: 'Neo4j Database',
      parameters: [
        { name: 'host', type: 'STRING', required: true },
        { name: 'port', type: 'INTEGER', required: false },
        { name: 'user', type: 'STRING', required: true },
        { name: 'password', type: 'PASSWORD', required: true },
        { name: 'database', type: 'STRING', required: false },
        { name: 'read_only', type: 'BOOLEAN', required: false },
      ],
      group: 'DATABASES',
      experimental: false,
    });
  });
});

describe('every component kind of the catalog', () => {
  const catalog = componentCatalog();

  it('has a unique qualified name and one for every kind of COMPONENT_KINDS', () => {
    const names = catalog.map((definition) => definition.qualifiedName);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toStrictEqual(Object.values(COMPONENT_KINDS).sort());
  });

  it('covers every component type', () => {
    expect(new Set(catalog.map((definition) => definition.type))).toStrictEqual(new Set(COMPONENT_TYPES));
  });

  it.each(catalog.map((definition) => [definition.qualifiedName, definition] as const))('%s is well formed', (_name, definition) => {
    expect(definition.state).toBe('AVAILABLE');
    expect(definition.name).not.toBe('');
    const optionNames = definition.options.map((option) => option.name);
    expect(new Set(optionNames).size).toBe(optionNames.length);
    for (const option of definition.options) {
      expect(option.label, option.name).toMatch(/^[A-Z]/);
      if (option.defaultValue !== null) expect(hasType(option.type, option.defaultValue), option.name).toBe(true);
      const allowed = optionConstraint(definition.qualifiedName, option.name)?.allowedValues;
      if (allowed !== undefined && option.defaultValue !== null) expect(allowed).toContain(option.defaultValue);
    }
    // every kind that takes messages handles failures the same way
    if (definition.type !== 'SOURCE') expect(optionNames.filter((name) => FAILURE_HANDLING.includes(name))).toStrictEqual(FAILURE_HANDLING);
    if (definition.resource !== null) {
      expect(resourceCatalog().some((resource) => resourceSatisfies(definition.resource ?? '', resource.qualifiedName))).toBe(true);
    }
  });

  it('marks the script components, and only them, experimental', () => {
    const experimental = catalog.filter((definition) => definition.experimental === true).map((definition) => definition.qualifiedName);
    expect(experimental).toStrictEqual([COMPONENT_KINDS.MESSAGE_TRANSFORMER, COMPONENT_KINDS.MESSAGE_FILTER]);
    expect(catalog.every((definition) => definition.experimental !== null)).toBe(true);
  });

  it('gives the script components a required script and a language of python (default) or javascript', () => {
    for (const kind of [COMPONENT_KINDS.MESSAGE_TRANSFORMER, COMPONENT_KINDS.MESSAGE_FILTER]) {
      const options = findComponentDefinition(kind)?.options ?? [];
      expect(options.slice(0, 2).map(({ name, type, required, defaultValue }) => [name, type, required, defaultValue])).toStrictEqual([
        ['script', 'SCRIPT', true, null],
        ['language', 'STRING', true, 'python'],
      ]);
      expect(optionConstraint(kind, 'language')).toStrictEqual({ allowedValues: ['python', 'javascript'] });
    }
  });

  it('sets a skill capability on the skill components only', () => {
    const withCapability = catalog.filter((definition) => definition.capabilityQualifiedName !== null);
    expect(withCapability.map((definition) => definition.type)).toStrictEqual(['SKILL', 'SKILL', 'SKILL', 'SKILL']);
    expect(withCapability.map((definition) => definition.capabilityQualifiedName)).toStrictEqual(Object.values(SKILL_CAPABILITY_QUALIFIED_NAMES));
  });

  // the relation components run dry on a scratch graph of the run (see the executor), so they have no side effects there
  it('supports dry runs only for kinds without side effects', () => {
    const sideEffects = catalog.filter((definition) => !definition.dryRunSupported).map((definition) => definition.qualifiedName);
    expect(sideEffects.sort()).toStrictEqual(
      [
        COMPONENT_KINDS.FILE_READER,
        COMPONENT_KINDS.WEBHOOK,
        COMPONENT_KINDS.GRAPH_READER,
        COMPONENT_KINDS.HTTP_ENRICHER,
        COMPONENT_KINDS.GRAPH_DATABASE_WRITER,
        COMPONENT_KINDS.NATS_SUBSCRIBER,
        COMPONENT_KINDS.NATS_PUBLISHER,
      ].sort(),
    );
  });

  it('chains Token Occurrence Writer to Rule Based Relation Extraction through node_id messages', () => {
    const writer = findComponentDefinition(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER);
    const extraction = findComponentDefinition(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION);
    expect(writer?.outputType).toBe(extraction?.inputType);
    expect([writer?.resource, extraction?.resource]).toStrictEqual([GRAPH_DATABASE_RESOURCE, GRAPH_DATABASE_RESOURCE]);
    expect(extraction?.options[0]).toMatchObject({ name: 'rules', type: 'JSON', required: true });
  });
});

describe('every resource kind of the catalog', () => {
  const catalog = resourceCatalog();

  it('has a unique qualified name, known parameter types and unique parameter names', () => {
    expect(catalog.map((resource) => resource.qualifiedName)).toStrictEqual(Object.values(RESOURCE_KINDS));
    for (const resource of catalog) {
      expect(resource.group).toBe('DATABASES');
      expect(resource.experimental).toBe(false);
      const names = resource.parameters.map((parameter) => parameter.name);
      expect(new Set(names).size).toBe(names.length);
      for (const parameter of resource.parameters) expect(PARAMETER_TYPES).toContain(parameter.type);
    }
  });

  it('lets graph components use Neo4j and AGE but never the SSO database', () => {
    expect(resourceSatisfies(GRAPH_DATABASE_RESOURCE, RESOURCE_KINDS.NEO4J_DATABASE)).toBe(true);
    expect(resourceSatisfies(GRAPH_DATABASE_RESOURCE, RESOURCE_KINDS.AGE_DATABASE)).toBe(true);
    expect(resourceSatisfies(GRAPH_DATABASE_RESOURCE, RESOURCE_KINDS.GRAPH_SSO_DATABASE)).toBe(false);
    expect(resourceSatisfies(GRAPH_DATABASE_RESOURCE, 'loom.resources.Unknown')).toBe(false);
    expect(resourceSatisfies(RESOURCE_KINDS.NEO4J_DATABASE, RESOURCE_KINDS.NEO4J_DATABASE)).toBe(true);
    expect(resourceSatisfies(RESOURCE_KINDS.NEO4J_DATABASE, RESOURCE_KINDS.AGE_DATABASE)).toBe(false);
  });

  it('gives AGE the connection parameters, the graph name (3+ characters) and an optional PASSWORD password', () => {
    const age = findResourceDefinition(RESOURCE_KINDS.AGE_DATABASE);
    expect(age?.parameters.map(({ name, type, required }) => `${name}:${type}${required ? '!' : ''}`)).toStrictEqual([
      'host:STRING!',
      'port:INTEGER',
      'user:STRING!',
      'password:PASSWORD',
      'database:STRING',
      'graph:STRING!',
      'read_only:BOOLEAN',
    ]);
    const graph = parameterConstraint(RESOURCE_KINDS.AGE_DATABASE, 'graph');
    expect(graph?.minLength).toBe(3);
    // AGE names a schema after the graph: an identifier
    expect(['people_graph', 'g_1'].map((name) => graph?.pattern?.regex.test(name))).toEqual([true, true]);
    expect(['my-graph', '1graph', 'a b c'].map((name) => graph?.pattern?.regex.test(name))).toEqual([false, false, false]);
  });

  it('recognises the SSO resource', () => {
    const sso = findResourceDefinition(RESOURCE_KINDS.GRAPH_SSO_DATABASE);
    const neo4j = findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE);
    expect(sso === undefined || neo4j === undefined).toBe(false);
    expect(isGraphSsoResource({ resource: sso! })).toBe(true);
    expect(isGraphSsoResource({ resource: neo4j! })).toBe(false);
  });
});

describe('catalogFor', () => {
  it('marks only the script components DISABLED while experiments are off, without changing the shared catalog', () => {
    const disabled = catalogFor({ experimentalEnabled: false }).filter((definition) => definition.state === 'DISABLED');
    expect(disabled.map((definition) => definition.qualifiedName)).toStrictEqual([COMPONENT_KINDS.MESSAGE_TRANSFORMER, COMPONENT_KINDS.MESSAGE_FILTER]);
    expect(findComponentDefinition(COMPONENT_KINDS.MESSAGE_TRANSFORMER)?.state).toBe('AVAILABLE');
    expect(componentCatalog().every((definition) => definition.state === 'AVAILABLE')).toBe(true);
  });

  it('answers the catalog itself while experiments are on', () => {
    expect(catalogFor({ experimentalEnabled: true })).toStrictEqual(componentCatalog());
  });
});

describe('copies', () => {
  it('hands out copies: changing one changes neither the catalog nor later answers', () => {
    const writer = findComponentDefinition(COMPONENT_KINDS.GRAPH_DATABASE_WRITER)!;
    writer.options[0]!.defaultValue = true;
    writer.options.pop();
    componentCatalog()[0]!.name = 'changed';
    const neo4j = findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE)!;
    neo4j.parameters[0]!.required = false;
    resourceCatalog()[0]!.parameters.length = 0;

    const again = findComponentDefinition(COMPONENT_KINDS.GRAPH_DATABASE_WRITER)!;
    expect(again.options).toHaveLength(11);
    expect(again.options[0]!.defaultValue).toBe(false);
    expect(componentCatalog()[0]!.name).toBe('Timer');
    expect(findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE)!.parameters[0]!.required).toBe(true);
    expect(resourceCatalog()[0]!.parameters).toHaveLength(6);
  });

  it('answers undefined for unknown qualified names', () => {
    expect(findComponentDefinition('loom.components.Nope')).toBeUndefined();
    expect(findResourceDefinition('loom.resources.Nope')).toBeUndefined();
    expect(findComponentDefinition('constructor')).toBeUndefined();
  });
});
