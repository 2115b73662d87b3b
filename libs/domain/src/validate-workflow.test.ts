import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { age, ARTICLES, articleImport, fedByInlet, instance, neo4j, resourceOf } from '../test/catalog-workflows.js';
import { violationsThrownBy } from '../test/violations.js';
import { COMPONENT_KINDS, RESOURCE_KINDS } from './catalog.js';
import { MAX_WORKFLOW_BYTES, validateWorkflow } from './validate-workflow.js';
import type { ComponentInstance, WorkflowConfiguration } from './workflow.js';
import { parseWorkflowJson } from './workflow-json.js';

/** The violations of a workflow as [field, reason] pairs, in the order reported. */
function problems(workflow: WorkflowConfiguration): [string, string | undefined][] {
  return violationsThrownBy(() => validateWorkflow(workflow)).map(({ field, reason }) => [field, reason]);
}

/** The article import workflow with one change. */
function articleImportWith(change: (workflow: WorkflowConfiguration) => void): WorkflowConfiguration {
  const workflow = articleImport();
  change(workflow);
  return workflow;
}

const component = (workflow: WorkflowConfiguration, i: number): ComponentInstance => workflow.components[i]!;
const writer = (workflow: WorkflowConfiguration): ComponentInstance => component(workflow, 2);
const optionNamed = (instance: ComponentInstance, name: string): { name: string; value: unknown } => instance.options.find((option) => option.name === name)!;

describe('valid workflows', () => {
  it('accepts inlet → JavaScript transformer → graph writer on Neo4j with $$NEO4J_PASSWORD and a logger as failure handler', () => {
    expect(() => validateWorkflow(articleImport())).not.toThrow();
  });

  it('accepts the fixture graph-writer.workflow.json', () => {
    const text = readFileSync(new URL('../test/fixtures/graph-writer.workflow.json', import.meta.url), 'utf8');
    expect(() => validateWorkflow(parseWorkflowJson(text))).not.toThrow();
  });

  it('accepts sealed values for parameters of any type, and an AGE database for a graph writer', () => {
    const workflow = articleImportWith((w) => {
      component(w, 2).resource = age({ port: '###AES-AQAFbG9vbTEAAAAA', read_only: '$$AGE_READ_ONLY' });
    });
    expect(() => validateWorkflow(workflow)).not.toThrow();
  });

  it('accepts null for an option that is not required, and leaves out options that have defaults', () => {
    const minimal = instance(
      COMPONENT_KINDS.GRAPH_DATABASE_WRITER,
      'Writer',
      { failure_handler: null, batch_size: null, query: 'RETURN 1' },
      { resource: neo4j() },
    );
    expect(() => validateWorkflow(fedByInlet([minimal]))).not.toThrow();
  });

  it('accepts a skill component with a skill', () => {
    const entities = instance(
      COMPONENT_KINDS.ENTITY_EXTRACTION,
      'Entities',
      {},
      {
        skill: { name: 'annotator', url: 'http://localhost:8085/v2/annotate', capability: 'ENTITY_EXTRACTION', pipeline: 'default', version: 'v2' },
        skillConfiguration: { inputs: { text: 'body.text' }, outputs: { entities: '_entities' } },
      },
    );
    expect(() => validateWorkflow(fedByInlet([entities]))).not.toThrow();
  });

  it('exports the size limit of a serialized workflow', () => {
    expect(MAX_WORKFLOW_BYTES).toBe(4 * 1024 * 1024);
  });
});

describe('components and options', () => {
  it('refuses an unknown component kind', () => {
    const workflow = articleImportWith((w) => (component(w, 1).component.qualifiedName = 'loom.components.processor.Teleporter'));
    expect(problems(workflow)).toStrictEqual([['components[1].component.qualifiedName', 'UNKNOWN_COMPONENT']]);
  });

  it('trusts the catalog, not the definition copied into the workflow', () => {
    const workflow = articleImportWith((w) => {
      writer(w).component.options = [];
      writer(w).component.resource = null;
      writer(w).options.push({ name: 'made_up', value: 1 });
    });
    expect(problems(workflow)).toStrictEqual([['components[2].options[7].name', 'UNKNOWN_OPTION']]);
  });

  it('refuses a missing required option without a default', () => {
    const workflow = articleImportWith((w) => (component(w, 2).options = component(w, 2).options.filter((option) => option.name !== 'query')));
    const violations = violationsThrownBy(() => validateWorkflow(workflow));
    expect(violations.map(({ field, reason }) => [field, reason])).toStrictEqual([['components[2].options', 'MISSING_OPTION']]);
    expect(violations[0]?.description).toContain("'query'");
  });

  it('refuses a required option given as an empty string', () => {
    const workflow = articleImportWith((w) => (optionNamed(component(w, 1), 'script').value = '  '));
    expect(problems(workflow)).toStrictEqual([['components[1].options[0].value', 'MISSING_OPTION']]);
  });

  it('refuses an option the kind does not define', () => {
    const workflow = articleImportWith((w) => component(w, 0).options.push({ name: 'port', value: 8080 }));
    expect(problems(workflow)).toStrictEqual([['components[0].options[0].name', 'UNKNOWN_OPTION']]);
  });

  it.each([
    ['BOOLEAN', 'stream_records', 'false'],
    ['INTEGER', 'batch_size', 2.5],
    ['INTEGER', 'delay', 2 ** 53],
    ['TEXT', 'query', 42],
    ['COMPONENT_SELECTION_FAILURE_HANDLER', 'failure_handler', { name: 'Errors' }],
    ['BOOLEAN (required, so not null)', 'store_error_content', null],
  ])('refuses a value of the wrong type: %s option %s', (type, name, value) => {
    const workflow = articleImportWith((w) => {
      writer(w).options = writer(w).options.filter((option) => option.name !== name);
      writer(w).options.push({ name, value });
    });
    const violations = violationsThrownBy(() => validateWorkflow(workflow));
    expect(violations.map(({ field, reason }) => [field, reason])).toStrictEqual([
      [`components[2].options[${writer(workflow).options.length - 1}].value`, 'WRONG_TYPE'],
    ]);
    expect(violations[0]?.description).toContain(type.split(' ')[0]);
  });

  it('checks SCRIPT, JSON and enumerated STRING options', () => {
    const workflow = articleImportWith((w) => {
      optionNamed(component(w, 1), 'language').value = 'ruby';
      optionNamed(component(w, 1), 'script').value = ['return body'];
      component(w, 3).options.push({ name: 'level', value: 'info' });
      w.components.push(instance(COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, 'Relations', { rules: { values: [Number.NaN] } }, { resource: neo4j() }));
      w.components.push(instance(COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, 'Tokens', {}, { resource: neo4j() }));
      w.links.push({ from: ARTICLES.inlet, to: 'Tokens' }, { from: 'Tokens', to: 'Relations' });
    });
    expect(problems(workflow)).toStrictEqual([
      ['components[1].options[0].value', 'WRONG_TYPE'],
      ['components[1].options[1].value', 'WRONG_TYPE'],
      ['components[3].options[1].name', 'DUPLICATE_NAME'],
      ['components[4].options[0].value', 'WRONG_TYPE'],
    ]);
    const language = violationsThrownBy(() => validateWorkflow(workflow))[1];
    expect(language?.description).toBe("option 'language' must be one of: python, javascript");
  });

  it('refuses enricher headers that sealing could not read, naming the option and never quoting the value', () => {
    const secret = 'Bearer s3cr3t-7f1e';
    const enricherWith = (headers: unknown) => fedByInlet([instance(COMPONENT_KINDS.HTTP_ENRICHER, 'Prices', { url: 'http://prices.example/{sku}', headers })]);
    for (const headers of [
      `{"Authorization": "${secret}"`,
      `["${secret}"]`,
      { Authorization: { token: secret } },
      `{"Authorization": ["${secret}"]}`,
      'not json',
    ]) {
      const violations = violationsThrownBy(() => validateWorkflow(enricherWith(headers)));
      expect(
        violations.map(({ field, reason }) => [field, reason]),
        JSON.stringify(headers),
      ).toStrictEqual([['components[0].options[1].value', 'UNREADABLE_SECRET_OPTION']]);
      expect(violations[0]?.description).not.toContain('s3cr3t');
    }
    expect(violationsThrownBy(() => validateWorkflow(enricherWith(`{"Authorization": "${secret}"`)))[0]?.description).toContain('line 1, column');
    for (const headers of [null, '', { Authorization: '$$TOKEN' }, JSON.stringify({ Authorization: '$$TOKEN' })]) {
      expect(() => validateWorkflow(enricherWith(headers))).not.toThrow();
    }
  });

  it('refuses an option given twice, at the second occurrence', () => {
    const workflow = articleImportWith((w) => component(w, 2).options.push({ name: 'batch_size', value: 10 }));
    expect(problems(workflow)).toStrictEqual([['components[2].options[7].name', 'DUPLICATE_NAME']]);
  });

  it('refuses two components with the same name, at the second', () => {
    const workflow = articleImportWith((w) => w.components.push(instance(COMPONENT_KINDS.LOGGER, ARTICLES.errors)));
    expect(problems(workflow)).toStrictEqual([['components[4].name', 'DUPLICATE_NAME']]);
  });

  it.each([
    ['names no component', 'Nobody_00000000-0000-0000-0000-000000000000'],
    ['names the component itself', ARTICLES.writer],
    ['is empty', ''],
  ])('refuses a failure handler that %s', (_what, handler) => {
    const workflow = articleImportWith((w) => (optionNamed(component(w, 2), 'failure_handler').value = handler));
    expect(problems(workflow)).toStrictEqual([['components[2].options[5].value', 'UNKNOWN_FAILURE_HANDLER']]);
  });
});

describe('links', () => {
  it('refuses links from and to unknown components', () => {
    const workflow = articleImportWith((w) => w.links.push({ from: 'Ghost', to: ARTICLES.writer }, { from: ARTICLES.inlet, to: 'Phantom' }));
    expect(problems(workflow)).toStrictEqual([
      ['links[2].from', 'UNKNOWN_COMPONENT'],
      ['links[3].to', 'UNKNOWN_COMPONENT'],
    ]);
  });

  it('refuses a link from a component to itself', () => {
    const workflow = articleImportWith((w) => w.links.push({ from: ARTICLES.transformer, to: ARTICLES.transformer }));
    expect(problems(workflow)).toStrictEqual([['links[2].to', 'SELF_LINK']]);
  });

  it('refuses the same link twice', () => {
    const workflow = articleImportWith((w) => w.links.push({ from: ARTICLES.inlet, to: ARTICLES.transformer }));
    expect(problems(workflow)).toStrictEqual([['links[2]', 'DUPLICATE_LINK']]);
  });
});

describe('resources', () => {
  const sso = () => resourceOf(RESOURCE_KINDS.GRAPH_SSO_DATABASE, 'Graph SSO_1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e', { url: 'neo4j://graph.internal:7687' });

  it('refuses the graph SSO resource wherever it appears, saying it is for interactive use only', () => {
    const workflow = articleImportWith((w) => {
      w.resources.push(sso());
      w.workflowResources.push(sso());
      writer(w).resource = sso();
    });
    const violations = violationsThrownBy(() => validateWorkflow(workflow));
    expect(violations.map(({ field, reason }) => [field, reason])).toStrictEqual([
      ['components[2].resource.resource.qualifiedName', 'SSO_RESOURCE_NOT_ALLOWED'],
      ['resources[1].resource.qualifiedName', 'SSO_RESOURCE_NOT_ALLOWED'],
      ['workflowResources[0].resource.qualifiedName', 'SSO_RESOURCE_NOT_ALLOWED'],
    ]);
    expect(violations[0]?.description).toContain('interactive use only');
  });

  it('refuses a component without the resource its kind needs', () => {
    const workflow = articleImportWith((w) => (writer(w).resource = null));
    expect(problems(workflow)).toStrictEqual([['components[2].resource', 'MISSING_RESOURCE']]);
  });

  // WRONG_RESOURCE_TYPE: every resource-using kind of today's catalog accepts every resource kind a
  // workflow may hold, so validate-workflow.resource-type.test.ts checks it with a catalog that has one more kind

  it('refuses an unknown resource kind anywhere', () => {
    const workflow = articleImportWith((w) => {
      writer(w).resource!.resource.qualifiedName = 'loom.resources.graph.Memgraph';
      w.workflowResources.push({ ...neo4j(), resource: { ...neo4j().resource, qualifiedName: 'loom.resources.Redis' } });
    });
    expect(problems(workflow)).toStrictEqual([
      ['components[2].resource.resource.qualifiedName', 'UNKNOWN_RESOURCE'],
      ['workflowResources[0].resource.qualifiedName', 'UNKNOWN_RESOURCE'],
    ]);
  });

  it('refuses a missing or empty required parameter', () => {
    const workflow = articleImportWith((w) => {
      delete writer(w).resource!.parameters.user;
      w.resources[0]!.parameters.host = '';
    });
    expect(problems(workflow)).toStrictEqual([
      ['components[2].resource.parameters', 'MISSING_PARAMETER'],
      ['resources[0].parameters', 'MISSING_PARAMETER'],
    ]);
  });

  it('refuses a parameter the resource kind does not define', () => {
    const workflow = articleImportWith((w) => (w.resources[0]!.parameters['bolt url'] = 'bolt://x'));
    expect(problems(workflow)).toStrictEqual([['resources[0].parameters["bolt url"]', 'UNKNOWN_PARAMETER']]);
  });

  it('refuses a parameter of the wrong type, never quoting the value', () => {
    const workflow = articleImportWith((w) => {
      w.resources[0]!.parameters.port = '7687';
      w.resources[0]!.parameters.read_only = 'yes';
      w.resources[0]!.parameters.password = 31415926;
      w.resources[0]!.parameters.user = '$$not a variable';
    });
    const violations = violationsThrownBy(() => validateWorkflow(workflow));
    expect(violations.map(({ field, reason }) => [field, reason])).toStrictEqual([
      ['resources[0].parameters.port', 'WRONG_TYPE'],
      ['resources[0].parameters.password', 'WRONG_TYPE'],
      ['resources[0].parameters.read_only', 'WRONG_TYPE'],
    ]);
    expect(violations.map((violation) => violation.description).join('\n')).not.toMatch(/31415926|7687|yes/);
  });

  it('refuses an AGE graph name shorter than 3 characters', () => {
    const workflow = articleImportWith((w) => (writer(w).resource = age({ graph: 'kg' })));
    expect(problems(workflow)).toStrictEqual([['components[2].resource.parameters.graph', 'INVALID_VALUE']]);
  });

  it('refuses an AGE graph name that is not an identifier, saying what it must be', () => {
    const workflow = articleImportWith((w) => (writer(w).resource = age({ graph: 'my-graph' })));
    const violations = violationsThrownBy(() => validateWorkflow(workflow));
    expect(violations).toStrictEqual([
      expect.objectContaining({
        field: 'components[2].resource.parameters.graph',
        reason: 'INVALID_VALUE',
        description: expect.stringContaining('an identifier of 3 to 63 characters'),
      }),
    ]);
  });
});

describe('skills', () => {
  it('refuses a skill component without a skill, or with a skill lacking name or url', () => {
    const workflow = fedByInlet([
      instance(COMPONENT_KINDS.KEYWORD_EXTRACTION, 'Keywords'),
      instance(COMPONENT_KINDS.PDF_PARSING, 'PDF', {}, { skill: { name: '', url: ' ' } }),
    ]);
    expect(problems(workflow)).toStrictEqual([
      ['components[0].skill', 'MISSING_SKILL'],
      ['components[1].skill.name', 'MISSING_SKILL'],
      ['components[1].skill.url', 'MISSING_SKILL'],
      ['components[0]', 'MISSING_UPSTREAM'],
    ]);
  });

  it('takes a skill given by name only (resolved from the registry at start)', () => {
    const workflow = fedByInlet([instance(COMPONENT_KINDS.PDF_PARSING, 'PDF', {}, { skill: { name: 'tika', url: '' } })]);
    expect(() => validateWorkflow(workflow)).not.toThrow();
  });

  it("checks a skill's fields by the rules of the component's capability, naming each field", () => {
    const workflow = fedByInlet([
      instance(COMPONENT_KINDS.ENTITY_EXTRACTION, 'Entities', {}, { skill: { name: 'nlp', url: 'http://localhost:8085/v2/annotate', pipeline: 'default' } }),
      instance(
        COMPONENT_KINDS.KEYWORD_EXTRACTION,
        'Keywords',
        {},
        { skill: { name: 'kw', url: 'http://localhost:8086/keywords', parameters: { damping: 0.8 } } },
      ),
    ]);
    workflow.links.push({ from: 'Entities', to: 'Keywords' });
    expect(problems(workflow)).toStrictEqual([
      ['components[0].skill.version', 'INVALID_SKILL'],
      ['components[1].skill.url', 'INVALID_SKILL'],
      ['components[1].skill.parameters.damping', 'INVALID_SKILL'],
    ]);
  });

  it('needs an entity extraction component upstream of a keyword extraction component, through other components too', () => {
    const entities = instance(
      COMPONENT_KINDS.ENTITY_EXTRACTION,
      'Entities',
      {},
      { skill: { name: 'nlp', url: 'http://localhost:8085/annotate', pipeline: 'default' } },
    );
    const keywords = instance(COMPONENT_KINDS.KEYWORD_EXTRACTION, 'Keywords', {}, { skill: { name: 'kw', url: 'http://localhost:8086/extractKeywords' } });
    const prices = instance(COMPONENT_KINDS.HTTP_ENRICHER, 'Prices', { url: 'http://prices.example/{sku}' });
    const downstream = fedByInlet(
      [entities, prices, keywords],
      [
        ['Entities', 'Prices'],
        ['Prices', 'Keywords'],
      ],
    );
    expect(() => validateWorkflow(downstream)).not.toThrow();
    const reversed = fedByInlet([entities, keywords], [['Keywords', 'Entities']]);
    const violations = violationsThrownBy(() => validateWorkflow(reversed));
    expect(violations).toStrictEqual([
      {
        field: 'components[1]',
        reason: 'MISSING_UPSTREAM',
        description: 'Keywords: a Keyword Extraction needs the message field annotation, which an Entity Extraction adds: link it downstream of one',
      },
    ]);
  });

  it('refuses a skill of another capability', () => {
    const workflow = fedByInlet([
      instance(COMPONENT_KINDS.WEB_DATA_EXTRACTION, 'Web', {}, { skill: { name: 'pdf', url: 'http://localhost:8089', capability: 'PDF_PARSING' } }),
    ]);
    expect(problems(workflow)).toStrictEqual([['components[0].skill.capability', 'WRONG_SKILL_CAPABILITY']]);
  });
});

describe('several problems at once', () => {
  it('reports every violation in one error, in document order', () => {
    const workflow = articleImportWith((w) => {
      component(w, 0).component.qualifiedName = 'loom.components.source.Telepathy';
      optionNamed(component(w, 1), 'language').value = 'cobol';
      writer(w).options = writer(w).options.filter((option) => option.name !== 'query');
      optionNamed(writer(w), 'failure_handler').value = 'Nobody';
      writer(w).resource!.parameters.password = 12;
      w.components.push(instance(COMPONENT_KINDS.LOGGER, ARTICLES.errors));
      w.links.push({ from: ARTICLES.writer, to: 'Nowhere' });
      w.workflowResources.push(resourceOf(RESOURCE_KINDS.GRAPH_SSO_DATABASE, 'SSO', { url: 'neo4j://x' }));
    });
    expect(problems(workflow)).toStrictEqual([
      ['components[0].component.qualifiedName', 'UNKNOWN_COMPONENT'],
      ['components[1].options[1].value', 'WRONG_TYPE'],
      ['components[2].options[5].value', 'UNKNOWN_FAILURE_HANDLER'],
      ['components[2].options', 'MISSING_OPTION'],
      ['components[2].resource.parameters.password', 'WRONG_TYPE'],
      ['components[4].name', 'DUPLICATE_NAME'],
      ['links[2].to', 'UNKNOWN_COMPONENT'],
      ['workflowResources[0].resource.qualifiedName', 'SSO_RESOURCE_NOT_ALLOWED'],
    ]);
  });
});
