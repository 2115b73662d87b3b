// The compact workflow form: what an engineer writes by hand (YAML or JSON), turned into the specification's full form,
// which stays the stored and exported one. A component is its kind and the options that differ from the catalog's
// defaults; a resource is defined once and referred to by name; a link is `from -> to` (chains allowed); names are
// plain and get stable uuids (derived-name.ts). compact-from-full.ts goes the other way; compact-text.ts reads and
// writes the text.

import { z } from 'zod';
import { appendJsonPath, type FieldViolation, formatJsonPath, ValidationError } from '@loom/foundation';
import { unknownKindDescription } from './catalog-definitions.js';
import { COMPONENT_KINDS, findComponentDefinition, findResourceDefinition, resourceCatalog, componentCatalog } from './catalog.js';
import { derivedInstanceName } from './derived-name.js';
import { validateWorkflow } from './validate-workflow.js';
import type { ComponentInstance, Link, ResourceInstance, Skill, WorkflowConfiguration } from './workflow.js';
import { jsonObject, jsonValue, skillSchema } from './workflow-schema.js';
import { parseWithSchema } from './zod-violations.js';

/** Prefix of every component kind's qualified name; the compact form may leave it out (`source.Inlet`). */
export const COMPONENT_KIND_PREFIX = 'loom.components.';
/** Prefix of every resource kind's qualified name; the compact form may leave it out (`graph.AgeDatabase`). */
export const RESOURCE_KIND_PREFIX = 'loom.resources.';
/** What separates the components of a link (or a chain of links) in the compact form. */
export const LINK_ARROW = '->';
/** Options whose value is the name of a resource of the workflow (the other references are failure handlers). */
export const RESOURCE_NAME_OPTIONS: ReadonlySet<string> = new Set(['target_resource']);

const resourceEntry = z.strictObject({ kind: z.string().min(1), parameters: jsonObject.optional() });
const inlineResource = z.strictObject({ name: z.string().min(1), kind: z.string().min(1), parameters: jsonObject.optional() });
const componentEntry = z.strictObject({
  kind: z.string().min(1),
  options: z.record(z.string(), jsonValue).optional(),
  resource: z.union([z.string().min(1), inlineResource]).optional(),
  skill: z.union([z.string().min(1), skillSchema.extend({ url: z.string().optional() })]).optional(),
  inputs: jsonObject.optional(),
  outputs: jsonObject.optional(),
});

/** Shape of a compact workflow file. */
export const compactWorkflowSchema = z.strictObject({
  $schema: z.string().optional(),
  name: z.string().min(1),
  autoStart: z.boolean().optional(),
  resources: z.record(z.string().min(1), resourceEntry).optional(),
  workflowResources: z.record(z.string().min(1), resourceEntry).optional(),
  components: z.record(z.string().min(1), z.union([z.string().min(1), componentEntry])),
  links: z.array(z.union([z.string().min(1), z.strictObject({ from: z.string(), to: z.string() })])).optional(),
  skills: z.array(skillSchema).optional(),
});

/** A compact workflow file as read. */
export type CompactWorkflow = z.output<typeof compactWorkflowSchema>;
/** One component of a compact workflow: its kind alone, or its kind with options, resource and skill. */
export type CompactComponent = CompactWorkflow['components'][string];
/** One resource of a compact workflow. */
export type CompactResource = z.output<typeof resourceEntry>;

/** The qualified name of a component kind written short (`source.Inlet`) or in full. */
export function componentKindName(kind: string): string {
  return kind.startsWith(COMPONENT_KIND_PREFIX) ? kind : `${COMPONENT_KIND_PREFIX}${kind}`;
}

/** The qualified name of a resource kind written short (`graph.AgeDatabase`) or in full. */
export function resourceKindName(kind: string): string {
  return kind.startsWith(RESOURCE_KIND_PREFIX) ? kind : `${RESOURCE_KIND_PREFIX}${kind}`;
}

/** The short name of a kind: its qualified name without the catalog's prefix. */
export function shortKindName(qualifiedName: string): string {
  for (const prefix of [COMPONENT_KIND_PREFIX, RESOURCE_KIND_PREFIX]) if (qualifiedName.startsWith(prefix)) return qualifiedName.slice(prefix.length);
  return qualifiedName;
}

/** A full workflow made from a compact one, and where each of its fields came from in the compact file. */
export interface ConvertedWorkflow {
  readonly workflow: WorkflowConfiguration;
  /** A field of the full form (`components[2].options[0].value`) as the compact file's path, for errors. */
  readonly compactField: (fullField: string) => string;
  /** A text with each instance name the conversion made (`Out_<uuid>`) written as the compact file's plain name. */
  readonly plainNames: (text: string) => string;
}

/**
 * Turns a compact workflow (as parsed from YAML or JSON) into the full form and validates it against the catalog.
 * Every violation names the field of the compact file (`components.parse.options.max_retry`) and its components and
 * resources by the plain names the file gives them (`Out`, not `Out_<uuid>`); ValidationError.
 */
export function workflowFromCompact(value: unknown): WorkflowConfiguration {
  const { workflow, compactField, plainNames } = convertCompact(parseWithSchema(compactWorkflowSchema, value));
  try {
    validateWorkflow(workflow);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(
      error.violations.map((violation) => ({ ...violation, field: compactField(violation.field), description: plainNames(violation.description) })),
    );
  }
  return workflow;
}

/** The full form of a compact workflow whose shape is checked; kinds and references are checked, the rest is not. */
export function convertCompact(compact: CompactWorkflow): ConvertedWorkflow {
  const conversion = new Conversion(compact);
  const workflow: WorkflowConfiguration = {
    name: compact.name,
    autoStart: compact.autoStart ?? false,
    components: Object.entries(compact.components).map(([name, entry], index) => conversion.component(name, entry, index)),
    links: (compact.links ?? []).flatMap((link, index) => conversion.links(link, index)),
    resources: conversion.resources.map(({ instance }) => instance),
    skills: compact.skills ?? [],
    workflowResources: conversion.workflowResources.map(({ instance }) => instance),
  };
  if (conversion.violations.length > 0) throw new ValidationError(conversion.violations);
  const plain = new Map<string, string>();
  for (const [name, instance] of conversion.componentInstanceNames()) plain.set(instance, name);
  for (const { plain: name, instance } of [...conversion.resources, ...conversion.workflowResources]) plain.set(instance.name, name);
  // longest first, so a name that is the start of another is not replaced inside it
  const instances = [...plain.keys()].filter((instance) => instance !== plain.get(instance)).sort((one, other) => other.length - one.length);
  const plainNames = (text: string): string => instances.reduce((result, instance) => result.replaceAll(instance, plain.get(instance) as string), text);
  return { workflow, compactField: (field) => conversion.compactField(field), plainNames };
}

interface NamedResource {
  readonly plain: string;
  readonly instance: ResourceInstance;
}

/** The state of one conversion: names, the path map and the violations found. */
class Conversion {
  readonly violations: FieldViolation[] = [];
  readonly resources: NamedResource[];
  readonly workflowResources: NamedResource[];
  private readonly componentNames = new Map<string, string>();
  /** Full-form path prefixes and the compact path each stands for; the longest matching prefix wins. */
  private readonly paths: [string, string][] = [];
  private linkCount = 0;

  constructor(private readonly compact: CompactWorkflow) {
    for (const name of Object.keys(compact.components)) this.componentNames.set(name, derivedInstanceName(compact.name, 'component', name));
    this.resources = this.resourceList('resources', compact.resources ?? {});
    this.workflowResources = this.resourceList('workflowResources', compact.workflowResources ?? {});
  }

  /** Each component's plain name and the instance name it was given. */
  componentInstanceNames(): ReadonlyMap<string, string> {
    return this.componentNames;
  }

  compactField(fullField: string): string {
    let best: [string, string] | undefined;
    for (const entry of this.paths) {
      const [prefix] = entry;
      const matches = fullField === prefix || fullField.startsWith(`${prefix}.`) || fullField.startsWith(`${prefix}[`);
      if (matches && (best === undefined || prefix.length > best[0].length)) best = entry;
    }
    return best === undefined ? fullField : `${best[1]}${fullField.slice(best[0].length)}`;
  }

  private map(fullPrefix: string, compactPath: readonly PropertyKey[]): void {
    this.paths.push([fullPrefix, formatJsonPath(compactPath)]);
  }

  private resourceList(list: 'resources' | 'workflowResources', entries: Record<string, CompactResource>): NamedResource[] {
    return Object.entries(entries).flatMap(([plain, entry], index): NamedResource[] => {
      const instance = this.resource(plain, entry, [list, plain]);
      if (instance === undefined) return [];
      this.map(`${list}[${index}]`, [list, plain]);
      this.map(`${list}[${index}].resource`, [list, plain, 'kind']);
      return [{ plain, instance }];
    });
  }

  private resource(plain: string, entry: CompactResource, path: readonly PropertyKey[]): ResourceInstance | undefined {
    const definition = findResourceDefinition(resourceKindName(entry.kind));
    if (definition === undefined) {
      const known = resourceCatalog().map((kind) => shortKindName(kind.qualifiedName));
      this.violations.push({
        field: formatJsonPath([...path, 'kind']),
        description: unknownKindDescription('resource', entry.kind, known),
        reason: 'UNKNOWN_RESOURCE',
      });
      return undefined;
    }
    return { name: derivedInstanceName(this.compact.name, 'resource', plain), resource: definition, parameters: entry.parameters ?? {} };
  }

  component(plain: string, given: CompactComponent, index: number): ComponentInstance {
    const entry = typeof given === 'string' ? { kind: given } : given;
    const base = `components[${index}]`;
    const path = ['components', plain];
    this.map(base, path);
    this.map(`${base}.component`, [...path, 'kind']);
    this.map(`${base}.skillConfiguration`, path);
    const definition = findComponentDefinition(componentKindName(entry.kind));
    if (definition === undefined) {
      const known = componentCatalog().map((kind) => shortKindName(kind.qualifiedName));
      this.violations.push({
        field: formatJsonPath([...path, 'kind']),
        description: unknownKindDescription('component', entry.kind, known),
        reason: 'UNKNOWN_COMPONENT',
      });
    }
    const options = Object.entries(entry.options ?? {}).map(([name, value], optionIndex) => {
      this.map(`${base}.options[${optionIndex}]`, [...path, 'options', name]);
      this.map(`${base}.options[${optionIndex}].value`, [...path, 'options', name]);
      const type = definition?.options.find((option) => option.name === name)?.type;
      return { name, value: this.optionValue(name, type === 'COMPONENT_SELECTION_FAILURE_HANDLER', value) };
    });
    return {
      name: this.componentNames.get(plain) ?? plain,
      // an unknown kind is reported above; the placeholder keeps the shape until the error is thrown
      component: definition ?? (findComponentDefinition(COMPONENT_KINDS.INLET) as NonNullable<typeof definition>),
      options,
      resource: entry.resource === undefined ? null : this.componentResource(entry.resource, [...path, 'resource']),
      skill: entry.skill === undefined ? null : skillOf(entry.skill),
      skillConfiguration: { inputs: entry.inputs ?? {}, outputs: entry.outputs ?? {} },
    };
  }

  /** A failure handler's or a target resource's plain name as the instance name it stands for. */
  private optionValue(name: string, namesComponent: boolean, value: unknown): unknown {
    if (typeof value !== 'string') return value;
    if (namesComponent) return this.componentNames.get(value) ?? value;
    if (RESOURCE_NAME_OPTIONS.has(name)) return this.namedResource(value)?.instance.name ?? value;
    return value;
  }

  private namedResource(plain: string): NamedResource | undefined {
    return [...this.resources, ...this.workflowResources].find((resource) => resource.plain === plain);
  }

  private componentResource(given: NonNullable<z.output<typeof componentEntry>['resource']>, path: PropertyKey[]): ResourceInstance | null {
    if (typeof given !== 'string') return this.resource(given.name, given, path) ?? null;
    const named = this.namedResource(given);
    if (named === undefined) {
      const known = [...this.resources, ...this.workflowResources].map((resource) => resource.plain);
      const description = `names no resource of the workflow${known.length === 0 ? ' (it defines none under resources)' : `; one of ${known.join(', ')}`}`;
      this.violations.push({ field: formatJsonPath(path), description, reason: 'UNKNOWN_RESOURCE' });
      return null;
    }
    return structuredClone(named.instance);
  }

  links(link: string | Link, index: number): Link[] {
    const path = appendJsonPath('links', index);
    const names = typeof link === 'string' ? link.split(LINK_ARROW).map((part) => part.trim()) : [link.from, link.to];
    if (names.length < 2 || names.some((name) => name === '')) {
      this.violations.push({
        field: path,
        description: `a link is 'from ${LINK_ARROW} to' (or a chain 'a ${LINK_ARROW} b ${LINK_ARROW} c')`,
        reason: 'INVALID_VALUE',
      });
      return [];
    }
    const instances = names.map((name) => this.componentNames.get(name) ?? name);
    return instances.slice(1).map((to, step) => {
      this.map(`links[${this.linkCount++}]`, ['links', index]);
      return { from: instances[step] as string, to };
    });
  }
}

function skillOf(given: string | (Omit<Skill, 'url'> & { url?: string | undefined })): Skill {
  if (typeof given === 'string') return { name: given, url: '' };
  const { url, ...rest } = given;
  return { ...dropUndefined(rest), name: given.name, url: url ?? '' };
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined)) as Partial<T>;
}
