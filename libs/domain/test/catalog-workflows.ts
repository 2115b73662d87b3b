import {
  COMPONENT_KINDS,
  type ComponentInstance,
  componentInstance,
  findResourceDefinition,
  RESOURCE_KINDS,
  type ResourceInstance,
  type WorkflowConfiguration,
} from '../src/index.js';

/** A component instance of a catalog kind with the given option values (in the given order), and any other fields. */
export function instance(kind: string, name: string, options: Record<string, unknown> = {}, more: Partial<ComponentInstance> = {}): ComponentInstance {
  return { ...componentInstance(kind, name, options), ...more };
}

/** A resource instance of a catalog kind with the given parameters. */
export function resourceOf(kind: string, name: string, parameters: Record<string, unknown>): ResourceInstance {
  const resource = findResourceDefinition(kind);
  if (resource === undefined) throw new Error(`no resource kind ${kind} in the catalog`);
  return { name, resource, parameters };
}

/** A Neo4j resource whose password is the ecosystem variable NEO4J_PASSWORD; `parameters` replace or add some. */
export function neo4j(parameters: Record<string, unknown> = {}): ResourceInstance {
  return resourceOf(RESOURCE_KINDS.NEO4J_DATABASE, 'Knowledge graph_0c8e5a4f-2d71-4b39-a6e2-91f3d7b05c48', {
    host: 'neo4j.internal.example',
    port: 7687,
    user: 'loom_writer',
    password: '$$NEO4J_PASSWORD',
    database: 'neo4j',
    read_only: false,
    ...parameters,
  });
}

/** An Apache AGE resource on the embedded PostgreSQL; `parameters` replace or add some. */
export function age(parameters: Record<string, unknown> = {}): ResourceInstance {
  return resourceOf(RESOURCE_KINDS.AGE_DATABASE, 'NLP graph_7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d', {
    host: '127.0.0.1',
    port: 5432,
    user: 'postgres',
    password: '###AES-AQAFbG9vbTEAAAAAAAAAAAAAAAAA',
    graph: 'nlp_graph',
    ...parameters,
  });
}

/** A workflow of these components joined by `[from, to]` links; `more` replaces other fields. */
export function workflowOf(components: ComponentInstance[], links: [string, string][] = [], more: Partial<WorkflowConfiguration> = {}): WorkflowConfiguration {
  return {
    name: 'Test workflow_5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f',
    autoStart: false,
    components,
    links: links.map(([from, to]) => ({ from, to })),
    resources: [],
    skills: [],
    workflowResources: [],
    ...more,
  };
}

/** Instance names of the article import workflow. */
export const ARTICLES = {
  inlet: 'Articles_5b2f9c1e-7a34-4d8b-b0e6-2c91a4f7d360',
  transformer: 'Clean up_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
  writer: 'Graph writer_9e47d2b8-3f15-4c6a-8d90-7ab1e5c4f203',
  errors: 'Errors_2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e',
} as const;

/**
 * A realistic valid workflow: inlet → JavaScript transformer → graph database writer on a Neo4j
 * resource (password `$$NEO4J_PASSWORD`), a logger as the failure handler of both processors.
 */
export function articleImport(): WorkflowConfiguration {
  return workflowOf(
    [
      instance(COMPONENT_KINDS.INLET, ARTICLES.inlet),
      instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, ARTICLES.transformer, {
        script: 'return { ...body, title: body.title.trim() };',
        language: 'javascript',
        failure_handler: ARTICLES.errors,
      }),
      instance(
        COMPONENT_KINDS.GRAPH_DATABASE_WRITER,
        ARTICLES.writer,
        {
          stream_records: false,
          batch_writes: true,
          batch_size: 50,
          max_retry: 3,
          delay: 500,
          failure_handler: ARTICLES.errors,
          query: 'MERGE (a:Article {id: $body.id}) SET a.title = $body.title',
        },
        { resource: neo4j() },
      ),
      instance(COMPONENT_KINDS.LOGGER, ARTICLES.errors, { level: 'warn' }),
    ],
    [
      [ARTICLES.inlet, ARTICLES.transformer],
      [ARTICLES.transformer, ARTICLES.writer],
    ],
    { autoStart: true, resources: [neo4j()] },
  );
}

/** Name of the inlet fedByInlet adds. */
export const FEEDING_INLET = 'Feed_0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d';

/**
 * A workflow of these components and links with an inlet added last (so the components keep their
 * indexes), linked into each component no given link leads to: every component is reached from a source.
 */
export function fedByInlet(components: ComponentInstance[], links: [string, string][] = []): WorkflowConfiguration {
  const fed = components.filter((component) => !links.some(([, to]) => to === component.name));
  return workflowOf(
    [...components, instance(COMPONENT_KINDS.INLET, FEEDING_INLET)],
    [...links, ...fed.map((component): [string, string] => [FEEDING_INLET, component.name])],
  );
}
