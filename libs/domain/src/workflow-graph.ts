// A workflow as boxes and arrows: the one structure that `loom workflow show` draws (Mermaid, DOT) and the console lays
// out. Each component is a node; each link a solid edge; a component's failure handler an edge labelled "failures".

import { findComponentDefinition } from './catalog.js';
import { parseStoredName } from './stored-name.js';
import { type ComponentTypeName, type WorkflowConfiguration } from './workflow.js';

/** One component of a workflow's picture. */
export interface WorkflowGraphNode {
  /** `c<index>`: stable within one version of the workflow, safe in any picture format. */
  readonly id: string;
  /** The component's name in the workflow. */
  readonly name: string;
  /** The name shown: the component's name without its instance uuid. */
  readonly label: string;
  /** The kind of component, by the catalog's name (`Graph Database Writer`). */
  readonly kind: string;
  /** SOURCE, PROCESSOR, PERSISTENCE, SINK… */
  readonly type: ComponentTypeName;
}

/** A link between two components, or a component's failure handler (`label: 'failures'`). */
export interface WorkflowGraphEdge {
  readonly from: string;
  readonly to: string;
  readonly label?: 'failures';
}

/** A workflow's picture as nodes and edges, independent of how it is drawn. */
export interface WorkflowGraph {
  readonly nodes: readonly WorkflowGraphNode[];
  readonly edges: readonly WorkflowGraphEdge[];
}

/** `<name>_<uuid>` shown as `<name>`: the uuid tells instances apart in files, not in a picture. */
export function shownComponentName(name: string): string {
  return parseStoredName(name)?.base ?? name;
}

/** The nodes and edges of a workflow's picture; links to unknown components are left out. */
export function workflowGraph(workflow: WorkflowConfiguration): WorkflowGraph {
  const ids = new Map<string, string>();
  const nodes = workflow.components.map((component, index): WorkflowGraphNode => {
    const id = `c${index}`;
    if (!ids.has(component.name)) ids.set(component.name, id);
    // the catalog's name of the kind; the copy in the file for a kind this loom does not know
    const definition = findComponentDefinition(component.component.qualifiedName) ?? component.component;
    return {
      id,
      name: component.name,
      label: shownComponentName(component.name),
      kind: definition.name || component.component.qualifiedName,
      type: definition.type,
    };
  });
  const edges: WorkflowGraphEdge[] = [];
  for (const link of workflow.links) {
    const from = ids.get(link.from);
    const to = ids.get(link.to);
    if (from !== undefined && to !== undefined) edges.push({ from, to });
  }
  for (const component of workflow.components) {
    const handler = component.options.find((option) => option.name === 'failure_handler')?.value;
    const from = ids.get(component.name);
    const to = typeof handler === 'string' ? ids.get(handler) : undefined;
    if (from !== undefined && to !== undefined) edges.push({ from, to, label: 'failures' });
  }
  return { nodes, edges };
}
