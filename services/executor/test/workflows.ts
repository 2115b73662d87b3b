import { type ComponentInstance, findComponentDefinition, type WorkflowConfiguration } from '@loom/domain';

/** A component instance of a catalog kind with the given option values. */
export function instance(kind: string, name: string, options: Record<string, unknown> = {}): ComponentInstance {
  const component = findComponentDefinition(kind);
  if (component === undefined) throw new Error(`no component kind ${kind} in the catalog`);
  return {
    name,
    component,
    options: Object.entries(options).map(([option, value]) => ({ name: option, value })),
    resource: null,
    skill: null,
    skillConfiguration: { inputs: {}, outputs: {} },
  };
}

/** A workflow of these components joined by `[from, to]` links. */
export function workflowOf(name: string, components: ComponentInstance[], links: [string, string][]): WorkflowConfiguration {
  return { name, autoStart: false, components, links: links.map(([from, to]) => ({ from, to })), resources: [], skills: [], workflowResources: [] };
}
