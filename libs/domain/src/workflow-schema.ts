import { z } from 'zod';
import {
  CATCH_UP_POLICIES,
  COMPONENT_STATES,
  COMPONENT_TYPES,
  OPTION_TYPES,
  OVERLAP_POLICIES,
  PARAMETER_TYPES,
  type Schedule,
  SKILL_CAPABILITIES,
  type WorkflowConfiguration,
} from './workflow.js';

// Zod schemas of the `.workflow.json` and `.scheduler.json` files: the single source of the
// parser (workflow-json.ts) and of the published JSON Schemas (schema/*.schema.json).
//
// Unknown fields: rejected, each as a violation naming it, in everything a user writes (the
// top level, component instances, option values, links, resource instances, skills, skill
// configurations, schedules), so a typo such as `autostart` never goes unnoticed. Tolerated and
// dropped inside the four definitions (component, option, resource and parameter definition):
// they are snapshots of loom's catalog, which stays authoritative by qualifiedName, and files
// written by other versions of the product may carry more catalog fields. Every field a
// definition does have is still required, so a misspelt one is reported as missing. Nothing
// unknown is kept: the loom.v1 messages have no place for it.

interface SchemaDocs {
  id?: string;
  title?: string;
  description?: string;
}

const docs = z.registry<SchemaDocs>();

/**
 * A copy of a schema carrying a description (or title) for the published JSON Schema; used by every schema of the
 * package. A copy, because the registry holds one entry per schema instance: a shared schema (jsonValue) documented in
 * two places would otherwise carry whichever description was added last, which depends on the order modules load.
 */
export function doc<T extends z.ZodType>(schema: T, meta: SchemaDocs): T {
  const documented = schema.clone();
  // add() rather than schema.register(): TypeScript cannot resolve register's conditional
  // parameter type for a generic T
  docs.add(documented, meta);
  return documented;
}

/** How deep arrays and objects may nest inside one free-form value (option value, parameter...). */
export const MAX_VALUE_DEPTH = 24;

// Reports where a value is no JSON value (undefined, a function, NaN, a Date...): such values
// cannot be written to a file nor carried in a google.protobuf.Value. Depth is bounded because
// each level costs several nested messages and ts-proto refuses to decode past 100 of them
// (measured: an option value of 33 nested objects no longer crosses the wire).
function checkJsonValue(value: unknown, ctx: z.RefinementCtx, path: PropertyKey[], ancestors: object[]): boolean {
  const fail = (message: string): false => {
    ctx.addIssue({ code: 'custom', message, path, params: { reason: 'NOT_JSON' } });
    return false;
  };
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value) || fail('not a JSON value: a number must be finite');
  if (typeof value !== 'object') return fail(`not a JSON value: ${typeof value}`);
  if (ancestors.includes(value)) return fail('not a JSON value: the value contains itself');
  if (ancestors.length >= MAX_VALUE_DEPTH) {
    ctx.addIssue({ code: 'custom', message: `nested deeper than ${MAX_VALUE_DEPTH} levels`, path, params: { reason: 'TOO_DEEP' } });
    return false;
  }
  if (Array.isArray(value)) {
    return value.every((item, index) => checkJsonValue(item, ctx, [...path, index], [...ancestors, value]));
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return fail('not a JSON value: not a plain object');
  return Object.entries(value).every(([key, item]) => checkJsonValue(item, ctx, [...path, key], [...ancestors, value]));
}

/** Any JSON value (null included); a missing key is reported by the enclosing object. */
export const jsonValue = z.unknown().superRefine((value, ctx) => {
  if (value !== undefined) checkJsonValue(value, ctx, [], []);
});

/** A JSON object with any keys and JSON values (`__proto__` keys are refused by parseWithSchema). */
export const jsonObject = z.record(z.string(), jsonValue);

const link = doc(
  z.strictObject({
    from: doc(z.string(), { description: 'Name of the component instance messages come from.' }),
    to: doc(z.string(), { description: 'Name of the component instance messages go to.' }),
  }),
  { id: 'Link', title: 'Link', description: 'A directed link between two component instances of this workflow.' },
);

const optionValue = doc(
  z.strictObject({
    name: doc(z.string(), { description: 'Name of the option, as in the option definitions of the component.' }),
    value: doc(jsonValue, { description: 'The chosen value, typed by the option definition (null for none).' }),
  }),
  { id: 'OptionValue', title: 'Option value', description: 'A value chosen for one option of a component instance.' },
);

const skillConfiguration = doc(
  z.strictObject({
    outputs: doc(jsonObject, { description: 'Skill output name to the message field that receives it.' }),
    inputs: doc(jsonObject, { description: 'Skill input name to the message field that provides it.' }),
  }),
  {
    id: 'SkillConfiguration',
    title: 'Skill configuration',
    description: 'Mapping of message fields to skill inputs and of skill outputs to message fields; both may be empty.',
  },
);

const parameterDefinition = doc(
  z.object({
    name: doc(z.string(), { description: 'Parameter name, the key in the parameters of a resource instance.' }),
    type: doc(z.enum(PARAMETER_TYPES), { description: 'Type of the parameter value; PASSWORD values are always sealed on disk.' }),
    required: doc(z.boolean(), { description: 'Whether a resource instance must give a value.' }),
  }),
  { id: 'ParameterDefinition', title: 'Parameter definition', description: 'One parameter a resource kind takes.' },
);

const resourceDefinition = doc(
  z.object({
    qualifiedName: doc(z.string(), { description: 'Identifies the resource kind.' }),
    name: doc(z.string(), { description: 'Display name of the resource kind.' }),
    parameters: doc(z.array(parameterDefinition), { description: 'Parameters the resource kind takes.' }),
    group: doc(z.string(), { description: 'Group of the resource kind, e.g. DATABASES.' }),
    experimental: doc(z.boolean(), { description: 'Whether the resource kind is experimental.' }),
  }),
  { id: 'ResourceDefinition', title: 'Resource definition', description: 'What a resource kind is (a snapshot of the catalog).' },
);

const resourceInstance = doc(
  z.strictObject({
    name: doc(z.string(), { description: '`<resource_name>_<uuid>`.' }),
    resource: resourceDefinition,
    parameters: doc(jsonObject, {
      description: 'Values by parameter name. `$$<variable>` takes an ecosystem variable; a sealed value is `###AES-<encrypted value>`.',
    }),
  }),
  { id: 'ResourceInstance', title: 'Resource instance', description: 'A configured resource (a database connection, say).' },
);

const optionDefinition = doc(
  z.object({
    group: doc(z.string(), { description: 'Group the option is shown in: Main, Advanced, Failure Handling...' }),
    name: doc(z.string(), { description: 'Option name, the name of an option value of a component instance.' }),
    type: doc(z.enum(OPTION_TYPES), { description: 'Type of the option value.' }),
    label: doc(z.string(), { description: 'Label shown to users.' }),
    required: doc(z.boolean(), { description: 'Whether a component instance must give a value.' }),
    defaultValue: doc(jsonValue, { description: 'Default value, typed by `type`; null when there is none.' }),
    overridable: doc(z.boolean(), { description: 'Whether the value may be overridden when the workflow starts.' }),
  }),
  { id: 'OptionDefinition', title: 'Option definition', description: 'One option a component kind accepts.' },
);

const componentDefinition = doc(
  z.object({
    qualifiedName: doc(z.string(), { description: 'Identifies the component kind, e.g. loom.components.persistence.GraphDatabaseWriter.' }),
    name: doc(z.string(), { description: 'Display name of the component kind.' }),
    type: doc(z.enum(COMPONENT_TYPES), { description: 'Kind of component.' }),
    state: doc(z.enum(COMPONENT_STATES), {
      description: 'AVAILABLE, or DISABLED for an experimental component while experimental components are off.',
    }),
    inputType: doc(z.string(), { description: 'Type name of the input message.' }),
    outputType: doc(z.string(), { description: 'Type name of the output message.' }),
    options: doc(z.array(optionDefinition), { description: 'Options the component kind accepts.' }),
    resource: doc(z.string().nullable(), { description: 'Type name of the resource kind the component needs; null when none.' }),
    capabilityQualifiedName: doc(z.string().nullable(), { description: 'Skill capability the component uses; null when none.' }),
    experimental: doc(z.boolean().nullable(), { description: 'Whether the component kind is experimental (security sensitive).' }),
    dryRunSupported: doc(z.boolean(), { description: 'Whether the component can take part in a dry run.' }),
  }),
  {
    id: 'ComponentDefinition',
    title: 'Component definition',
    description: 'What a component kind is (a snapshot of the catalog): its identity, message types and options.',
  },
);

/** A skill as the workflow file writes it (the compact form too). */
export const skillSchema = doc(
  z.strictObject({
    name: doc(z.string(), { description: 'User-defined name of the skill.' }),
    url: doc(z.string(), { description: 'URL of the skill microservice, including its endpoint (e.g. /v2/annotate).' }),
    capability: doc(z.enum(SKILL_CAPABILITIES).optional(), { description: 'Capability the skill fulfils.' }),
    pipeline: doc(z.string().optional(), { description: 'Entity extraction: NLP pipeline name; `default` selects the default pipeline.' }),
    version: doc(z.string().optional(), { description: 'Entity extraction: blank for /annotate, `v2` for /v2/annotate.' }),
    parameters: doc(jsonObject.optional(), { description: 'Keyword extraction: extra parameters by name (iterations, damp...).' }),
  }),
  { id: 'Skill', title: 'Skill', description: 'An external skill microservice registered by name and URL.' },
);

const componentInstance = doc(
  z.strictObject({
    name: doc(z.string(), { description: '`<component_name>_<uuid>`.' }),
    component: componentDefinition,
    options: doc(z.array(optionValue), { description: 'Values chosen for the options of the component.' }),
    resource: doc(resourceInstance.nullable().default(null), { description: 'The resource the component uses; null or absent when none.' }),
    skill: doc(skillSchema.nullable(), { description: 'The skill the component calls; null for non-skill components.' }),
    skillConfiguration,
  }),
  { id: 'ComponentInstance', title: 'Component instance', description: 'One component of the workflow, with its option values.' },
);

/** Shape of a `.workflow.json` file. */
export const workflowSchema = z.strictObject({
  $schema: doc(z.string().optional(), { description: 'URL or path of this JSON Schema, so editors complete the file; loom ignores it.' }),
  name: doc(z.string(), { description: '`<workflow_name>_<uuid>`; may contain spaces.' }),
  autoStart: doc(z.boolean(), { description: 'Whether loom starts the workflow when it starts itself.' }),
  components: doc(z.array(componentInstance), { description: 'The components of the workflow.' }),
  links: doc(z.array(link), { description: 'Links between components; empty when there are none.' }),
  resources: doc(z.array(resourceInstance), { description: 'Resources used by the components.' }),
  skills: doc(z.array(skillSchema), { description: 'Skills used by the components.' }),
  workflowResources: doc(z.array(resourceInstance), { description: 'Resources of the workflow itself; same shape as resources.' }),
});

/** Shape of a `.scheduler.json` file; cron and time zone semantics are checked by the scheduler. */
export const scheduleSchema = z.strictObject({
  enabled: doc(z.boolean(), { description: 'Whether the schedule fires.' }),
  cron: doc(z.string().min(1), { description: 'Six-field cron expression, seconds first, e.g. `0 */5 * * * *`.' }),
  timezone: doc(z.string().min(1), { description: 'IANA time zone the cron expression is read in, e.g. Europe/Berlin.' }),
  overlap: doc(z.enum(OVERLAP_POLICIES), {
    description: 'A fire while the previous run still goes: SKIP it, QUEUE it, or ALLOW a second run.',
  }),
  catchUp: doc(z.enum(CATCH_UP_POLICIES), {
    description: 'Fires missed while loom was down: NONE runs none, LATEST runs the latest once, ALL runs each.',
  }),
});

// the parsers return the domain types: these fail to compile when schema and types drift apart
const _workflowShape: (parsed: z.output<typeof workflowSchema>) => WorkflowConfiguration = (parsed) => parsed;
const _scheduleShape: (parsed: z.output<typeof scheduleSchema>) => Schedule = (parsed) => parsed;
const _workflowInput: (workflow: WorkflowConfiguration) => z.input<typeof workflowSchema> = (workflow) => workflow;

const SCHEMA_BASE = 'https://loom.dev/schema/';

/** The published JSON Schema of a zod schema: draft 2020-12, with `$id`, title and description first. */
export function publishJsonSchema(schema: z.ZodType, file: string, title: string, description: string): Record<string, unknown> {
  const { $schema, ...generated } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', metadata: docs });
  return { $schema, $id: `${SCHEMA_BASE}${file}`, title, description, ...generated };
}

/** JSON Schema (draft 2020-12) of a `.workflow.json` file, as published in schema/workflow.schema.json. */
export function workflowJsonSchema(): Record<string, unknown> {
  return publishJsonSchema(
    workflowSchema,
    'workflow.schema.json',
    'loom workflow configuration',
    'A `<workflow_name>_<uuid>.workflow.json` file: components joined by links, with the resources and skills they use.',
  );
}

/** JSON Schema (draft 2020-12) of a `.scheduler.json` file, as published in schema/schedule.schema.json. */
export function scheduleJsonSchema(): Record<string, unknown> {
  return publishJsonSchema(
    scheduleSchema,
    'schedule.schema.json',
    'loom workflow schedule',
    'A `<workflow_name>_<uuid>.scheduler.json` file: when the workflow beside it runs.',
  );
}
