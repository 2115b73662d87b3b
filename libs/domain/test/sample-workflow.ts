import type { ComponentInstance, ResourceInstance, WorkflowConfiguration } from '../src/index.js';

/** A resource instance of the graph database kind with the given parameters. */
export function graphDatabase(name: string, parameters: Record<string, unknown>): ResourceInstance {
  return {
    name,
    resource: {
      qualifiedName: 'loom.resources.graph.Neo4jDatabase',
      name: 'Neo4j Database',
      parameters: [
        { name: 'host', type: 'STRING', required: true },
        { name: 'password', type: 'PASSWORD', required: true },
      ],
      group: 'DATABASES',
      experimental: false,
    },
    parameters,
  };
}

/** An entity-extraction skill component: exercises skills, skill configuration and free-form values. */
export function entityExtraction(): ComponentInstance {
  return {
    name: 'Entities_6a1d0c53-1b7e-4f09-9d2a-3e8c5b7f1a24',
    component: {
      qualifiedName: 'loom.components.skill.EntityExtraction',
      name: 'Entity Extraction',
      type: 'SKILL',
      state: 'AVAILABLE',
      inputType: 'loom.messages.JsonMessage',
      outputType: 'loom.messages.JsonMessage',
      options: [{ group: 'Main', name: 'mapping', type: 'JSON', label: 'Mapping', required: false, defaultValue: { a: [1, 2.5, null] }, overridable: true }],
      resource: null,
      capabilityQualifiedName: 'loom.capabilities.EntityExtraction',
      experimental: null,
      dryRunSupported: false,
    },
    options: [{ name: 'mapping', value: { nested: { list: ['x', true, null, -3] } } }],
    resource: null,
    skill: { name: 'annotator', url: 'http://localhost:8085/v2/annotate', capability: 'ENTITY_EXTRACTION', pipeline: 'default', version: 'v2' },
    skillConfiguration: {
      inputs: { text: 'body.text' },
      outputs: { entities: '_entities', annotation: '_annotation' },
    },
  };
}

/** A workflow touching every kind of field: skills, resources at all three places, nulls. */
export function sampleWorkflow(): WorkflowConfiguration {
  const writer: ComponentInstance = {
    name: 'Writer_1f0e2d3c-4b5a-4697-8877-665544332211',
    component: {
      qualifiedName: 'loom.components.persistence.GraphDatabaseWriter',
      name: 'Graph Database Writer',
      type: 'PERSISTENCE',
      state: 'DISABLED',
      inputType: 'loom.messages.JsonMessage',
      outputType: 'loom.messages.JsonMessage',
      options: [
        { group: 'Main', name: 'stream_records', type: 'BOOLEAN', label: 'Stream records', required: true, defaultValue: false, overridable: false },
        {
          group: 'Failure Handling',
          name: 'failure_handler',
          type: 'COMPONENT_SELECTION_FAILURE_HANDLER',
          label: 'Failure handler',
          required: false,
          defaultValue: null,
          overridable: false,
        },
      ],
      resource: 'loom.resources.graph.Neo4jDatabase',
      capabilityQualifiedName: null,
      experimental: true,
      dryRunSupported: true,
    },
    options: [
      { name: 'stream_records', value: true },
      { name: 'failure_handler', value: 'Entities_6a1d0c53-1b7e-4f09-9d2a-3e8c5b7f1a24' },
    ],
    resource: graphDatabase('Main graph_aa', { host: 'localhost', password: '###AES-AAAA', 'odd key.x': 1 }),
    skill: null,
    skillConfiguration: { inputs: {}, outputs: {} },
  };
  return {
    name: 'Sample with spaces_0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
    autoStart: false,
    components: [entityExtraction(), writer],
    links: [{ from: 'Entities_6a1d0c53-1b7e-4f09-9d2a-3e8c5b7f1a24', to: 'Writer_1f0e2d3c-4b5a-4697-8877-665544332211' }],
    resources: [graphDatabase('Main graph_aa', { host: 'localhost', password: '$$NEO4J_PASSWORD' })],
    skills: [
      { name: 'annotator', url: 'http://localhost:8085/v2/annotate', capability: 'ENTITY_EXTRACTION', pipeline: 'default', version: 'v2' },
      { name: 'keywords', url: 'http://localhost:8086/extractKeywords', parameters: { iterations: 30, damp: 0.85, admittedPOSs: ['NN', 'NNS'] } },
      { name: 'pdf', url: 'http://localhost:8089' },
    ],
    workflowResources: [graphDatabase('Helper graph_bb', { host: 'nlp-graph', password: '$$NLP_PASSWORD', port: 7688 })],
  };
}
