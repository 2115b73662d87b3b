// loom's catalog: every component kind and resource kind a workflow may use. It is the authority
// on options, parameters and resources; the definitions copied into a workflow file are snapshots
// nobody trusts (see validate-workflow.ts). The data below is frozen; every exported function
// hands out copies, so a caller can change what it gets without touching the catalog.

import { NotFoundError } from '@loom/foundation';
import { concurrencyOption, constraintOf, deepFreeze, failureHandlingOptions, option, type OptionSpec, type ValueConstraint } from './catalog-options.js';
import { natsPublisherOptions, natsSubscriberOptions } from './nats-catalog.js';
import { MESSAGE_FIELDS, MESSAGE_TYPES, type MessageFieldFlow } from './message-types.js';
import type {
  ComponentDefinition,
  ComponentInstance,
  ComponentTypeName,
  ParameterDefinition,
  ResourceDefinition,
  ResourceInstance,
  SkillCapabilityName,
} from './workflow.js';

export { MESSAGE_TYPES } from './message-types.js';

/** Qualified names of the component kinds of the catalog: `loom.components.<category>.<Kind>`. */
export const COMPONENT_KINDS = {
  TIMER: 'loom.components.source.Timer',
  INLET: 'loom.components.source.Inlet',
  FILE_READER: 'loom.components.source.FileReader',
  WEBHOOK: 'loom.components.source.Webhook',
  GRAPH_READER: 'loom.components.source.GraphReader',
  NATS_SUBSCRIBER: 'loom.components.source.NatsSubscriber',
  MESSAGE_TRANSFORMER: 'loom.components.processor.MessageTransformer',
  MESSAGE_FILTER: 'loom.components.processor.MessageFilter',
  HTTP_ENRICHER: 'loom.components.processor.HttpEnricher',
  ENTITY_EXTRACTION: 'loom.components.skill.EntityExtraction',
  KEYWORD_EXTRACTION: 'loom.components.skill.KeywordExtraction',
  WEB_DATA_EXTRACTION: 'loom.components.skill.WebDataExtraction',
  PDF_PARSING: 'loom.components.skill.PdfParsing',
  GRAPH_DATABASE_WRITER: 'loom.components.persistence.GraphDatabaseWriter',
  TOKEN_OCCURRENCE_WRITER: 'loom.components.persistence.TokenOccurrenceWriter',
  RULE_BASED_RELATION_EXTRACTION: 'loom.components.datascience.RuleBasedRelationExtraction',
  LOGGER: 'loom.components.sink.Logger',
  NATS_PUBLISHER: 'loom.components.sink.NatsPublisher',
} as const;
/** Qualified name of a component kind of the catalog. */
export type ComponentKindName = (typeof COMPONENT_KINDS)[keyof typeof COMPONENT_KINDS];

/** How a webhook authenticates its callers (its `authentication` option); `none` only when chosen. */
export const WEBHOOK_AUTHENTICATION = ['bearer', 'hmac', 'none'] as const;

/** The smallest `timestamp_tolerance` (ms) of a signed webhook: senders' clocks are never closer than that. */
export const WEBHOOK_MIN_TIMESTAMP_TOLERANCE_MS = 1000;

/** Qualified names of the resource kinds of the catalog: `loom.resources.<category>.<Kind>`. */
export const RESOURCE_KINDS = {
  NEO4J_DATABASE: 'loom.resources.graph.Neo4jDatabase',
  AGE_DATABASE: 'loom.resources.graph.AgeDatabase',
  /** Single sign-on to Neo4j: for interactive perspectives only, never in a workflow. */
  GRAPH_SSO_DATABASE: 'loom.resources.graph.Neo4jSsoDatabase',
} as const;
/** Qualified name of a resource kind of the catalog. */
export type ResourceKindName = (typeof RESOURCE_KINDS)[keyof typeof RESOURCE_KINDS];

/**
 * The resource type graph components name in their definition's `resource`: a family, not a
 * kind. Neo4j and AGE databases belong to it; the SSO database does not. See resourceSatisfies.
 */
export const GRAPH_DATABASE_RESOURCE = 'loom.resources.graph.GraphDatabase';

/** `capabilityQualifiedName` of the skill components, by the capability a registered skill declares. */
export const SKILL_CAPABILITY_QUALIFIED_NAMES: Readonly<Record<SkillCapabilityName, string>> = Object.freeze({
  ENTITY_EXTRACTION: 'loom.capabilities.EntityExtraction',
  KEYWORD_EXTRACTION: 'loom.capabilities.KeywordExtraction',
  WEB_DATA_EXTRACTION: 'loom.capabilities.WebDataExtraction',
  PDF_PARSING: 'loom.capabilities.PdfParsing',
});

// ---- building blocks -------------------------------------------------------------------------

type ParameterSpec = ParameterDefinition & ValueConstraint;

interface ComponentEntry {
  readonly definition: ComponentDefinition;
  readonly constraints: ReadonlyMap<string, ValueConstraint>;
  readonly fields: MessageFieldFlow;
}

interface ResourceEntry {
  readonly definition: ResourceDefinition;
  /** Resource types this kind satisfies besides its own qualified name. */
  readonly families: readonly string[];
  readonly constraints: ReadonlyMap<string, ValueConstraint>;
}

interface ComponentSpec {
  qualifiedName: ComponentKindName;
  name: string;
  type: ComponentTypeName;
  inputType: string;
  outputType: string;
  options: OptionSpec[];
  resource?: string;
  capability?: SkillCapabilityName;
  experimental?: boolean;
  dryRunSupported: boolean;
  /** Message fields (MESSAGE_FIELDS) this kind adds for those downstream of it. */
  adds?: string[];
  /** Message fields this kind reads that only some kinds add: it must be downstream of one of them. */
  needs?: string[];
}

function component(spec: ComponentSpec): ComponentEntry {
  const constraints = new Map<string, ValueConstraint>();
  const options = spec.options.map(({ allowedValues, minLength, pattern, ...definition }) => {
    const constraint = constraintOf({ allowedValues, minLength, pattern });
    if (constraint !== undefined) constraints.set(definition.name, constraint);
    return definition;
  });
  const definition: ComponentDefinition = {
    qualifiedName: spec.qualifiedName,
    name: spec.name,
    type: spec.type,
    state: 'AVAILABLE',
    inputType: spec.inputType,
    outputType: spec.outputType,
    options,
    resource: spec.resource ?? null,
    capabilityQualifiedName: spec.capability === undefined ? null : SKILL_CAPABILITY_QUALIFIED_NAMES[spec.capability],
    experimental: spec.experimental ?? false,
    dryRunSupported: spec.dryRunSupported,
  };
  return { definition, constraints, fields: { adds: spec.adds ?? [], needs: spec.needs ?? [] } };
}

function resource(qualifiedName: ResourceKindName, name: string, families: string[], parameters: ParameterSpec[]): ResourceEntry {
  const constraints = new Map<string, ValueConstraint>();
  const definitions = parameters.map(({ allowedValues, minLength, pattern, ...definition }) => {
    const constraint = constraintOf({ allowedValues, minLength, pattern });
    if (constraint !== undefined) constraints.set(definition.name, constraint);
    return definition;
  });
  return { definition: { qualifiedName, name, parameters: definitions, group: 'DATABASES', experimental: false }, families, constraints };
}

// ---- the component kinds -------------------------------------------------------------------------

const { JSON: JSON_MESSAGE, NODE_ID, NONE } = MESSAGE_TYPES;
const skill = (
  qualifiedName: ComponentKindName,
  name: string,
  capability: SkillCapabilityName,
  fields: Pick<ComponentSpec, 'adds' | 'needs'> = {},
): ComponentEntry =>
  component({
    ...fields,
    qualifiedName,
    name,
    type: 'SKILL',
    inputType: JSON_MESSAGE,
    outputType: JSON_MESSAGE,
    options: [...failureHandlingOptions(), concurrencyOption()],
    capability,
    dryRunSupported: true,
  });
const script = (qualifiedName: ComponentKindName, name: string): ComponentEntry =>
  component({
    qualifiedName,
    name,
    type: 'PROCESSOR',
    inputType: JSON_MESSAGE,
    outputType: JSON_MESSAGE,
    options: [
      option('Main', 'script', 'SCRIPT', 'Script', true, null),
      option('Main', 'language', 'STRING', 'Script language', true, 'python', { allowedValues: ['python', 'javascript'] }),
      ...failureHandlingOptions(),
      concurrencyOption(),
    ],
    experimental: true,
    dryRunSupported: true,
  });

const components: ReadonlyMap<string, ComponentEntry> = deepFreeze(
  new Map(
    [
      component({
        qualifiedName: COMPONENT_KINDS.TIMER,
        name: 'Timer',
        type: 'SOURCE',
        inputType: NONE,
        outputType: JSON_MESSAGE,
        options: [
          option('Main', 'period', 'INTEGER', 'Period (ms)', true, 60_000),
          option('Advanced', 'initial_delay', 'INTEGER', 'Initial delay (ms)', false, 0),
        ],
        dryRunSupported: true,
      }),
      // messages come from PublishMessage, addressed by the instance's name: no options needed
      component({
        qualifiedName: COMPONENT_KINDS.INLET,
        name: 'Inlet',
        type: 'SOURCE',
        inputType: NONE,
        outputType: JSON_MESSAGE,
        options: [],
        dryRunSupported: true,
      }),
      component({
        qualifiedName: COMPONENT_KINDS.FILE_READER,
        name: 'File Reader',
        type: 'SOURCE',
        inputType: NONE,
        outputType: JSON_MESSAGE,
        options: [
          option('Main', 'directory', 'STRING', 'Directory', true, null),
          option('Main', 'suffix', 'STRING', 'File name suffix', false, '.json'),
          option('Advanced', 'processed_directory', 'STRING', 'Move processed files to directory', false, null),
        ],
        dryRunSupported: false,
      }),
      component({
        qualifiedName: COMPONENT_KINDS.WEBHOOK,
        name: 'Webhook',
        type: 'SOURCE',
        inputType: NONE,
        outputType: JSON_MESSAGE,
        options: [
          option('Main', 'port', 'INTEGER', 'Port', true, 8101),
          option('Main', 'path', 'STRING', 'Path', true, '/'),
          // bearer: an operator's token (as PublishMessage); hmac: `X-Loom-Signature: sha256=<hex>` of the body; none must be chosen
          option('Main', 'authentication', 'STRING', 'Authentication (bearer, hmac or none)', true, 'bearer', { allowedValues: WEBHOOK_AUTHENTICATION }),
          option('Main', 'secret', 'STRING', 'HMAC shared secret ($$VARIABLE; for hmac)', false, null),
          // hmac: the signature covers `<X-Loom-Timestamp>.<body>`, so a captured request cannot be replayed
          option('Advanced', 'signed_timestamp', 'BOOLEAN', 'Signature covers X-Loom-Timestamp (for hmac)', false, true),
          option('Advanced', 'timestamp_tolerance', 'INTEGER', 'Timestamp tolerance either way (ms; for hmac)', false, 300_000),
          // unset: where loom's own server listens (server.host), so a loopback loom opens no outside port
          option('Advanced', 'host', 'STRING', 'Listen address (default: server.host)', false, null),
        ],
        dryRunSupported: false,
      }),
      component({
        qualifiedName: COMPONENT_KINDS.GRAPH_READER,
        name: 'Graph Reader',
        type: 'SOURCE',
        inputType: NONE,
        outputType: JSON_MESSAGE,
        options: [option('Main', 'query', 'TEXT', 'Cypher query', true, null), option('Main', 'period', 'INTEGER', 'Polling period (ms)', true, 60_000)],
        resource: GRAPH_DATABASE_RESOURCE,
        // the query is the user's and may write
        dryRunSupported: false,
      }),
      component({
        qualifiedName: COMPONENT_KINDS.NATS_SUBSCRIBER,
        name: 'NATS Subscriber',
        type: 'SOURCE',
        inputType: NONE,
        outputType: JSON_MESSAGE,
        options: natsSubscriberOptions(),
        // it takes messages off a broker others publish to (and acknowledges JetStream's)
        dryRunSupported: false,
      }),
      script(COMPONENT_KINDS.MESSAGE_TRANSFORMER, 'Message Transformer'),
      script(COMPONENT_KINDS.MESSAGE_FILTER, 'Message Filter'),
      component({
        qualifiedName: COMPONENT_KINDS.HTTP_ENRICHER,
        name: 'HTTP Enricher',
        type: 'PROCESSOR',
        inputType: JSON_MESSAGE,
        outputType: JSON_MESSAGE,
        options: [
          option('Main', 'url', 'STRING', 'URL template', true, null),
          option('Main', 'method', 'STRING', 'HTTP method', true, 'GET', { allowedValues: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] }),
          option('Main', 'target_field', 'STRING', 'Target field', true, '_enrichment'),
          option('Advanced', 'headers', 'JSON', 'Headers (values may use $$VARIABLE)', false, null),
          option('Advanced', 'timeout', 'INTEGER', 'Timeout (ms)', false, 10_000),
          ...failureHandlingOptions(),
          concurrencyOption(),
        ],
        // the endpoint may change things (POST, PUT...)
        dryRunSupported: false,
      }),
      skill(COMPONENT_KINDS.ENTITY_EXTRACTION, 'Entity Extraction', 'ENTITY_EXTRACTION', { adds: [MESSAGE_FIELDS.ANNOTATION] }),
      skill(COMPONENT_KINDS.KEYWORD_EXTRACTION, 'Keyword Extraction', 'KEYWORD_EXTRACTION', { needs: [MESSAGE_FIELDS.ANNOTATION] }),
      skill(COMPONENT_KINDS.WEB_DATA_EXTRACTION, 'Web Data Extraction', 'WEB_DATA_EXTRACTION'),
      skill(COMPONENT_KINDS.PDF_PARSING, 'PDF Parsing', 'PDF_PARSING'),
      component({
        qualifiedName: COMPONENT_KINDS.GRAPH_DATABASE_WRITER,
        name: 'Graph Database Writer',
        type: 'PERSISTENCE',
        inputType: JSON_MESSAGE,
        outputType: JSON_MESSAGE,
        // the specification's nine options in its order (the failure handling ones are its last five), then the Cypher
        options: [
          option('Main', 'stream_records', 'BOOLEAN', 'Stream records', true, false),
          option('Advanced', 'batch_writes', 'BOOLEAN', 'Batch writes', false, false),
          option('Advanced', 'batch_size', 'INTEGER', 'Batch size', false, 20),
          option('Advanced', 'aggregation_timeout', 'INTEGER', 'Aggregation timeout', false, 300),
          ...failureHandlingOptions(),
          option('Main', 'query', 'TEXT', 'Cypher query', true, null),
          // issue 50: lineage properties (loom_message_id, loom_source, ...) on every node the query writes
          option('Advanced', 'provenance', 'BOOLEAN', 'Provenance (lineage properties on written nodes)', false, false),
        ],
        resource: GRAPH_DATABASE_RESOURCE,
        dryRunSupported: false,
      }),
      component({
        qualifiedName: COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER,
        name: 'Token Occurrence Writer',
        type: 'PERSISTENCE',
        inputType: JSON_MESSAGE,
        outputType: NODE_ID,
        adds: [MESSAGE_FIELDS.NODE_ID],
        options: [
          option('Main', 'annotation_field', 'STRING', 'Annotation field (v2 entity extraction output)', true, '_annotation'),
          ...failureHandlingOptions(),
        ],
        resource: GRAPH_DATABASE_RESOURCE,
        // a dry run writes into a scratch graph of the run, not into the resource
        dryRunSupported: true,
      }),
      component({
        qualifiedName: COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION,
        name: 'Rule Based Relation Extraction',
        type: 'DATA_SCIENCE',
        inputType: NODE_ID,
        outputType: JSON_MESSAGE,
        needs: [MESSAGE_FIELDS.NODE_ID],
        options: [
          option('Main', 'rules', 'JSON', 'Rules (schema/relation-rules.schema.json)', true, null),
          ...failureHandlingOptions(),
          // the graph the relations are also written into, by the name of a resource of the workflow
          option('Advanced', 'target_resource', 'STRING', 'Target graph resource (name of a workflow resource)', false, null),
        ],
        resource: GRAPH_DATABASE_RESOURCE,
        // a dry run reads the run's scratch graph (see the Token Occurrence Writer) and writes no target
        dryRunSupported: true,
      }),
      component({
        qualifiedName: COMPONENT_KINDS.LOGGER,
        name: 'Logger',
        type: 'SINK',
        inputType: JSON_MESSAGE,
        outputType: NONE,
        options: [
          option('Main', 'level', 'STRING', 'Log level', true, 'info', { allowedValues: ['debug', 'info', 'warn', 'error'] }),
          ...failureHandlingOptions(),
          concurrencyOption(),
        ],
        dryRunSupported: true,
      }),
      component({
        qualifiedName: COMPONENT_KINDS.NATS_PUBLISHER,
        name: 'NATS Publisher',
        type: 'SINK',
        inputType: JSON_MESSAGE,
        outputType: NONE,
        options: natsPublisherOptions(),
        dryRunSupported: false,
      }),
    ].map((entry): [string, ComponentEntry] => [entry.definition.qualifiedName, entry]),
  ),
);

// ---- the resource kinds --------------------------------------------------------------------------

const resources: ReadonlyMap<string, ResourceEntry> = deepFreeze(
  new Map(
    [
      // the specification's graph database resource, parameter for parameter
      resource(
        RESOURCE_KINDS.NEO4J_DATABASE,
        'Neo4j Database',
        [GRAPH_DATABASE_RESOURCE],
        [
          { name: 'host', type: 'STRING', required: true },
          { name: 'port', type: 'INTEGER', required: false },
          { name: 'user', type: 'STRING', required: true },
          { name: 'password', type: 'PASSWORD', required: true },
          { name: 'database', type: 'STRING', required: false },
          { name: 'read_only', type: 'BOOLEAN', required: false },
        ],
      ),
      // PostgreSQL with Apache AGE: the Neo4j parameters (so the password is a PASSWORD parameter
      // that gets sealed, which it would not be inside a connection URL) plus the graph's name; the
      // password is optional, for the embedded graph (host `embedded`) and trust-authenticated servers
      resource(
        RESOURCE_KINDS.AGE_DATABASE,
        'PostgreSQL with Apache AGE',
        [GRAPH_DATABASE_RESOURCE],
        [
          { name: 'host', type: 'STRING', required: true },
          { name: 'port', type: 'INTEGER', required: false },
          { name: 'user', type: 'STRING', required: true },
          { name: 'password', type: 'PASSWORD', required: false },
          { name: 'database', type: 'STRING', required: false },
          // AGE refuses graph names shorter than 3 characters, and names a schema after the graph
          {
            name: 'graph',
            type: 'STRING',
            required: true,
            minLength: 3,
            pattern: {
              regex: /^[A-Za-z_][A-Za-z0-9_]{2,62}$/,
              description: 'an identifier of 3 to 63 characters (letters, digits, _; not starting with a digit)',
            },
          },
          { name: 'read_only', type: 'BOOLEAN', required: false },
        ],
      ),
      // the specification's SSO database type: a name and the server's location; in no family,
      // because no workflow may use it
      resource(RESOURCE_KINDS.GRAPH_SSO_DATABASE, 'Neo4j Database (single sign-on)', [], [{ name: 'url', type: 'STRING', required: true }]),
    ].map((entry): [string, ResourceEntry] => [entry.definition.qualifiedName, entry]),
  ),
);

// ---- lookups -----------------------------------------------------------------------------------

/** Every component kind of the catalog, in catalog order (sources first); each call returns fresh copies. */
export function componentCatalog(): ComponentDefinition[] {
  return [...components.values()].map(({ definition }) => structuredClone(definition));
}

/**
 * The catalog's own (deep-frozen) definition of a component kind, for read-only use inside libs/domain where a copy
 * per lookup would cost more than the check it serves; not exported from the package.
 */
export function frozenComponentDefinition(qualifiedName: string): Readonly<ComponentDefinition> | undefined {
  return components.get(qualifiedName)?.definition;
}

/** The catalog's own (deep-frozen) definition of a resource kind; see frozenComponentDefinition. */
export function frozenResourceDefinition(qualifiedName: string): Readonly<ResourceDefinition> | undefined {
  return resources.get(qualifiedName)?.definition;
}

/** A copy of the component kind with this qualified name, or undefined when the catalog has none. */
export function findComponentDefinition(qualifiedName: string): ComponentDefinition | undefined {
  const entry = components.get(qualifiedName);
  return entry === undefined ? undefined : structuredClone(entry.definition);
}

/**
 * A new instance of a catalog kind with these option values (in their order), no resource and no
 * skill: how tests, benchmarks and tools build workflows. NotFoundError for a kind not in the catalog.
 */
export function componentInstance(qualifiedName: string, name: string, options: Readonly<Record<string, unknown>> = {}): ComponentInstance {
  const component = findComponentDefinition(qualifiedName);
  if (component === undefined) throw new NotFoundError('component kind', qualifiedName);
  return {
    name,
    component,
    options: Object.entries(options).map(([option, value]) => ({ name: option, value })),
    resource: null,
    skill: null,
    skillConfiguration: { inputs: {}, outputs: {} },
  };
}

/**
 * The component kinds as a client should see them: experimental (script) kinds are DISABLED
 * while experiments are off. The shared catalog is not changed.
 */
export function catalogFor(options: { experimentalEnabled: boolean }): ComponentDefinition[] {
  return componentCatalog().map((definition): ComponentDefinition => {
    const disabled = definition.experimental === true && !options.experimentalEnabled;
    return disabled ? { ...definition, state: 'DISABLED' } : definition;
  });
}

/** Every resource kind of the catalog; each call returns fresh copies. */
export function resourceCatalog(): ResourceDefinition[] {
  return [...resources.values()].map(({ definition }) => structuredClone(definition));
}

/** A copy of the resource kind with this qualified name, or undefined when the catalog has none. */
export function findResourceDefinition(qualifiedName: string): ResourceDefinition | undefined {
  const entry = resources.get(qualifiedName);
  return entry === undefined ? undefined : structuredClone(entry.definition);
}

/**
 * Whether a resource of kind `resourceQualifiedName` can serve a component whose definition names
 * `componentResourceType`: the same kind, or a kind of that family (Neo4j and AGE for
 * GRAPH_DATABASE_RESOURCE).
 */
export function resourceSatisfies(componentResourceType: string, resourceQualifiedName: string): boolean {
  if (componentResourceType === resourceQualifiedName) return true;
  return resources.get(resourceQualifiedName)?.families.includes(componentResourceType) ?? false;
}

/** Whether a resource is the graph SSO kind: for interactive use only, never in a workflow. */
export function isGraphSsoResource(resource: Pick<ResourceInstance, 'resource'>): boolean {
  return resource.resource.qualifiedName === RESOURCE_KINDS.GRAPH_SSO_DATABASE;
}

/** The message fields a component kind adds and needs; none for a kind the catalog does not know. */
export function componentMessageFields(qualifiedName: string): MessageFieldFlow {
  return components.get(qualifiedName)?.fields ?? { adds: [], needs: [] };
}

/** What an option's value must be beyond its type (`language`: python or javascript), if anything. */
export function optionConstraint(componentQualifiedName: string, optionName: string): ValueConstraint | undefined {
  return components.get(componentQualifiedName)?.constraints.get(optionName);
}

/** What a resource parameter's value must be beyond its type (AGE `graph`: 3+ characters), if anything. */
export function parameterConstraint(resourceQualifiedName: string, parameterName: string): ValueConstraint | undefined {
  return resources.get(resourceQualifiedName)?.constraints.get(parameterName);
}
