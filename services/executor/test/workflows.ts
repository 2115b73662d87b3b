import { type ComponentInstance, componentInstance, type WorkflowConfiguration } from '@loom/domain';

/** A component instance of a catalog kind with the given option values. */
export const instance = componentInstance;

/** A workflow of these components joined by `[from, to]` links. */
export function workflowOf(name: string, components: ComponentInstance[], links: [string, string][]): WorkflowConfiguration {
  return { name, autoStart: false, components, links: links.map(([from, to]) => ({ from, to })), resources: [], skills: [], workflowResources: [] };
}
