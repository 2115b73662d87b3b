import { isDeepStrictEqual } from 'node:util';
import { ValidationError } from '@loom/foundation';
import { frozenComponentDefinition } from './catalog.js';
import { type CompactComponent, type CompactResource, type CompactWorkflow, LINK_ARROW, RESOURCE_NAME_OPTIONS, shortKindName } from './compact-workflow.js';
import { plainInstanceName } from './derived-name.js';
import type { ComponentInstance, Link, ResourceInstance, Skill, WorkflowConfiguration } from './workflow.js';

/**
 * The compact form of a full workflow: kinds by their short names, only the options that differ from the catalog's
 * defaults, resources defined once and referred to by name, links joined into chains, and names whose uuid is the
 * derived one written plain (any other name is kept whole, so the full form comes back unchanged). A name two
 * components (or two resources) share cannot be a key of the compact form: ValidationError.
 */
export function workflowToCompact(workflow: WorkflowConfiguration): CompactWorkflow {
  const plain = (kind: 'component' | 'resource', name: string): string => plainInstanceName(workflow.name, kind, name);
  const listed = [...workflow.resources, ...workflow.workflowResources];
  const componentNames = new Map(workflow.components.map((component) => [component.name, plain('component', component.name)]));
  const resourceNames = new Map(listed.map((resource) => [resource.name, plain('resource', resource.name)]));
  const compact: CompactWorkflow = { name: workflow.name, components: {} };
  if (workflow.autoStart) compact.autoStart = true;
  if (workflow.resources.length > 0) compact.resources = resourceMap('resources', workflow.resources, resourceNames);
  if (workflow.workflowResources.length > 0) compact.workflowResources = resourceMap('workflowResources', workflow.workflowResources, resourceNames);
  workflow.components.forEach((component, index) => {
    const key = componentNames.get(component.name) as string;
    if (Object.hasOwn(compact.components, key)) throw duplicate(`components[${index}].name`, 'component');
    compact.components[key] = compactComponent(component, { componentNames, resourceNames, listed, plain });
  });
  if (workflow.links.length > 0) compact.links = chains(workflow.links, componentNames);
  if (workflow.skills.length > 0) compact.skills = workflow.skills;
  // the order an engineer reads a file in: what it is, what it uses, what it does
  const { name, autoStart, resources, workflowResources, components, links, skills } = compact;
  return dropUndefined({ name, autoStart, resources, workflowResources, components, links, skills }) as CompactWorkflow;
}

function dropUndefined(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined));
}

function duplicate(field: string, what: string): ValidationError {
  return ValidationError.of(field, `another ${what} has this name: the compact form keys ${what}s by name`, 'DUPLICATE_NAME');
}

function resourceMap(list: string, resources: readonly ResourceInstance[], names: ReadonlyMap<string, string>): Record<string, CompactResource> {
  const map: Record<string, CompactResource> = {};
  resources.forEach((resource, index) => {
    const key = names.get(resource.name) as string;
    if (Object.hasOwn(map, key)) throw duplicate(`${list}[${index}].name`, 'resource');
    map[key] = resourceEntry(resource);
  });
  return map;
}

function resourceEntry(resource: ResourceInstance): CompactResource {
  const entry: CompactResource = { kind: shortKindName(resource.resource.qualifiedName) };
  if (Object.keys(resource.parameters).length > 0) entry.parameters = resource.parameters;
  return entry;
}

interface Names {
  readonly componentNames: ReadonlyMap<string, string>;
  readonly resourceNames: ReadonlyMap<string, string>;
  readonly listed: readonly ResourceInstance[];
  readonly plain: (kind: 'component' | 'resource', name: string) => string;
}

function compactComponent(component: ComponentInstance, names: Names): CompactComponent {
  const kind = shortKindName(component.component.qualifiedName);
  const definition = frozenComponentDefinition(component.component.qualifiedName);
  const options: Record<string, unknown> = {};
  for (const { name, value } of component.options) {
    const option = definition?.options.find((candidate) => candidate.name === name);
    if (option !== undefined && isDeepStrictEqual(value, option.defaultValue)) continue;
    options[name] = referenceOf(name, option?.type === 'COMPONENT_SELECTION_FAILURE_HANDLER', value, names);
  }
  const entry: Exclude<CompactComponent, string> = { kind };
  if (Object.keys(options).length > 0) entry.options = options;
  if (component.resource !== null && component.resource !== undefined) entry.resource = resourceReference(component.resource, names);
  if (component.skill !== null) entry.skill = compactSkill(component.skill);
  if (Object.keys(component.skillConfiguration.inputs).length > 0) entry.inputs = component.skillConfiguration.inputs;
  if (Object.keys(component.skillConfiguration.outputs).length > 0) entry.outputs = component.skillConfiguration.outputs;
  return Object.keys(entry).length === 1 ? kind : entry;
}

function referenceOf(name: string, namesComponent: boolean, value: unknown, names: Names): unknown {
  if (typeof value !== 'string') return value;
  if (namesComponent) return names.componentNames.get(value) ?? value;
  if (RESOURCE_NAME_OPTIONS.has(name)) return names.resourceNames.get(value) ?? value;
  return value;
}

/** A component's resource by the name of the listed resource it equals, or written out where it is used. */
function resourceReference(resource: ResourceInstance, names: Names): NonNullable<Exclude<CompactComponent, string>['resource']> {
  const same = names.listed.find((listed) => listed.name === resource.name && isDeepStrictEqual(listed, resource));
  if (same !== undefined) return names.resourceNames.get(same.name) as string;
  return { name: names.plain('resource', resource.name), ...resourceEntry(resource) };
}

function compactSkill(skill: Skill): NonNullable<Exclude<CompactComponent, string>['skill']> {
  const { url, ...rest } = skill;
  if (url === '' && Object.keys(rest).length === 1) return skill.name;
  return url === '' ? rest : skill;
}

/** Links as `a -> b -> c` chains, in their order; a link whose ends cannot be written with arrows stays an object. */
function chains(links: readonly Link[], componentNames: ReadonlyMap<string, string>): (string | Link)[] {
  const written: (string | Link)[] = [];
  let chain: string[] | undefined;
  const close = (): void => {
    if (chain !== undefined) written.push(chain.join(` ${LINK_ARROW} `));
    chain = undefined;
  };
  for (const link of links) {
    const from = componentNames.get(link.from) ?? link.from;
    const to = componentNames.get(link.to) ?? link.to;
    if (![from, to].every(writableWithArrows)) {
      close();
      written.push({ from, to });
    } else if (chain !== undefined && chain.at(-1) === from) chain.push(to);
    else {
      close();
      chain = [from, to];
    }
  }
  close();
  return written;
}

function writableWithArrows(name: string): boolean {
  return name !== '' && !name.includes(LINK_ARROW) && name === name.trim();
}
