// The JSON Schema of the compact workflow form, made from the catalog: one definition per component kind with its
// options (type, default, allowed values, label), one per resource kind with its parameters. Published as
// schema/compact-workflow.schema.json (written and checked by test/json-schema-files.test.ts), so an editor completes
// and checks a compact file.

import { componentCatalog, optionConstraint, parameterConstraint, resourceCatalog } from './catalog.js';
import { LINK_ARROW, shortKindName } from './compact-workflow.js';
import type { ComponentDefinition, OptionDefinition, OptionTypeName, ParameterDefinition, ParameterTypeName, ResourceDefinition } from './workflow.js';

type Schema = Record<string, unknown>;

const OPTION_JSON_TYPES: Record<OptionTypeName, string | undefined> = {
  BOOLEAN: 'boolean',
  INTEGER: 'integer',
  NUMBER: 'number',
  STRING: 'string',
  TEXT: 'string',
  SCRIPT: 'string',
  // any JSON value
  JSON: undefined,
  COMPONENT_SELECTION_FAILURE_HANDLER: 'string',
};

const PARAMETER_JSON_TYPES: Record<ParameterTypeName, string> = { STRING: 'string', INTEGER: 'integer', BOOLEAN: 'boolean', PASSWORD: 'string' };

const stringMap = (description: string): Schema => ({ type: 'object', description, additionalProperties: true });

function optionSchema(kind: string, option: OptionDefinition): Schema {
  const constraint = optionConstraint(kind, option.name);
  const type = OPTION_JSON_TYPES[option.type];
  const notes = [
    option.label,
    option.type === 'COMPONENT_SELECTION_FAILURE_HANDLER' ? 'the name of a component of this workflow that takes the failures' : undefined,
    option.required ? 'required' : undefined,
    option.defaultValue === null ? undefined : `default ${JSON.stringify(option.defaultValue)}`,
    `(${option.group})`,
  ].filter((note) => note !== undefined);
  const schema: Schema = { description: notes.join('; ') };
  if (type !== undefined) schema['type'] = option.required ? type : [type, 'null'];
  if (constraint?.allowedValues !== undefined) schema['enum'] = option.required ? [...constraint.allowedValues] : [...constraint.allowedValues, null];
  if (constraint?.minLength !== undefined) schema['minLength'] = constraint.minLength;
  if (option.defaultValue !== null) schema['default'] = option.defaultValue;
  return schema;
}

function parameterSchema(kind: string, parameter: ParameterDefinition): Schema {
  const constraint = parameterConstraint(kind, parameter.name);
  const type = PARAMETER_JSON_TYPES[parameter.type];
  const notes = [
    parameter.type === 'PASSWORD' ? 'a password: write $$VARIABLE (an ecosystem variable); a plain value is sealed at push' : undefined,
    parameter.required ? 'required' : 'optional',
    constraint?.pattern?.description,
    type === 'string' ? undefined : `${type}, or $$VARIABLE`,
  ].filter((note) => note !== undefined);
  // a $$VARIABLE or a sealed value stands for any type
  const schema: Schema = { description: notes.join('; '), type: type === 'string' ? 'string' : [type, 'string'] };
  if (constraint?.minLength !== undefined) schema['minLength'] = constraint.minLength;
  return schema;
}

function resourceKindSchema(definition: ResourceDefinition): Schema {
  const kind = definition.qualifiedName;
  return {
    type: 'object',
    description: definition.name,
    required: ['kind'],
    additionalProperties: false,
    properties: {
      kind: { enum: [shortKindName(kind), kind], description: `${definition.name} (${kind})` },
      parameters: {
        type: 'object',
        additionalProperties: false,
        required: definition.parameters.filter((parameter) => parameter.required).map((parameter) => parameter.name),
        properties: Object.fromEntries(definition.parameters.map((parameter) => [parameter.name, parameterSchema(kind, parameter)])),
      },
    },
  };
}

function componentKindSchema(definition: ComponentDefinition): Schema {
  const kind = definition.qualifiedName;
  const properties: Schema = {
    kind: { enum: [shortKindName(kind), kind], description: `${definition.name} (${kind}): ${definition.type}` },
    options: {
      type: 'object',
      description: 'Options that differ from the catalog defaults.',
      additionalProperties: false,
      properties: Object.fromEntries(definition.options.map((option) => [option.name, optionSchema(kind, option)])),
    },
  };
  if (definition.resource !== null) {
    properties['resource'] = {
      description: `The resource it uses (${definition.resource}): the name of one under resources, or one written here.`,
      anyOf: [{ type: 'string' }, { $ref: '#/$defs/inlineResource' }],
    };
  }
  if (definition.capabilityQualifiedName !== null) {
    properties['skill'] = {
      description: `The registered skill it calls (${definition.capabilityQualifiedName}): its name, or the skill written out.`,
      anyOf: [{ type: 'string' }, { type: 'object', required: ['name'], additionalProperties: true, properties: { name: { type: 'string' } } }],
    };
    properties['inputs'] = stringMap('Skill inputs: input name to message field.');
    properties['outputs'] = stringMap('Skill outputs: output name to message field.');
  }
  return { type: 'object', description: definition.name, required: ['kind'], additionalProperties: false, properties };
}

/** JSON Schema (draft 2020-12) of a compact workflow file, made from the catalog; published as schema/compact-workflow.schema.json. */
export function compactWorkflowJsonSchema(): Record<string, unknown> {
  const components = componentCatalog();
  const resources = resourceCatalog();
  const kinds = components.flatMap((definition) => [shortKindName(definition.qualifiedName), definition.qualifiedName]);
  const resourceMap: Schema = {
    type: 'object',
    additionalProperties: { anyOf: resources.map((definition) => ({ $ref: `#/$defs/${shortKindName(definition.qualifiedName)}` })) },
  };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://loom.dev/schema/compact-workflow.schema.json',
    title: 'loom compact workflow',
    description: `A workflow written by hand (YAML or JSON): components by kind with the options that differ from their defaults, resources by name, links as 'a ${LINK_ARROW} b'.`,
    type: 'object',
    required: ['name', 'components'],
    additionalProperties: false,
    properties: {
      $schema: { type: 'string', description: 'This schema, for editors; loom ignores it.' },
      name: { type: 'string', description: 'The workflow name (or its stored name <workflow_name>_<uuid>).' },
      autoStart: { type: 'boolean', default: false, description: 'Whether loom starts the workflow when it starts itself.' },
      resources: { ...resourceMap, description: 'Resources by name, each of a kind with its parameters; components refer to them by name.' },
      workflowResources: { ...resourceMap, description: 'Resources of the workflow itself, as resources.' },
      components: {
        type: 'object',
        description: 'Components by name: a kind (source.Inlet), or a kind with options, resource and skill. Names get stable uuids.',
        additionalProperties: { anyOf: [{ enum: kinds }, ...components.map((definition) => ({ $ref: `#/$defs/${shortKindName(definition.qualifiedName)}` }))] },
      },
      links: {
        type: 'array',
        description: `Links as 'from ${LINK_ARROW} to', or chains 'a ${LINK_ARROW} b ${LINK_ARROW} c'.`,
        items: {
          anyOf: [
            { type: 'string' },
            { type: 'object', required: ['from', 'to'], additionalProperties: false, properties: { from: { type: 'string' }, to: { type: 'string' } } },
          ],
        },
      },
      skills: { type: 'array', description: 'Skills of the workflow, as in the full form.', items: { type: 'object' } },
    },
    $defs: {
      ...Object.fromEntries(components.map((definition) => [shortKindName(definition.qualifiedName), componentKindSchema(definition)])),
      ...Object.fromEntries(resources.map((definition) => [shortKindName(definition.qualifiedName), resourceKindSchema(definition)])),
      inlineResource: {
        type: 'object',
        description: 'A resource written where it is used: its name, kind and parameters.',
        required: ['name', 'kind'],
        properties: { name: { type: 'string' }, kind: { type: 'string' }, parameters: { type: 'object' } },
      },
    },
  };
}
