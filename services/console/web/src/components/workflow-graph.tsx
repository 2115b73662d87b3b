// A workflow's picture: the structure `loom workflow show` draws (components and their links, failure handlers
// dashed), laid out left to right by dagre and drawn by React Flow, each component with its live counts.
import '@xyflow/react/dist/style.css';
import dagre from '@dagrejs/dagre';
import { Background, Controls, type Edge, Handle, type Node, type NodeProps, Position, ReactFlow } from '@xyflow/react';
import { type ReactNode, useMemo } from 'react';
import { type ComponentCounts, type PictureEdge, type PictureNode } from '../types.js';

const NODE_WIDTH = 220;
const NODE_HEIGHT = 104;

type ComponentNodeData = { readonly node: PictureNode; readonly counts: ComponentCounts | undefined };
type ComponentNode = Node<ComponentNodeData, 'component'>;

/**
 * Positions from dagre, computed once per picture (the counts change, the layout does not). The failure handlers'
 * edges are drawn but not laid out: ranked by them, a handler every component points at would sit after the last
 * writer and stretch the picture; without them it sits in the first column, under the sources.
 */
function layout(nodes: readonly PictureNode[], edges: readonly PictureEdge[]): Map<string, { x: number; y: number }> {
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: 'LR', nodesep: 30, ranksep: 50, marginx: 10, marginy: 10 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) graph.setNode(node.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const edge of edges) if (edge.label !== 'failures') graph.setEdge(edge.from, edge.to);
  dagre.layout(graph);
  const positions = new Map<string, { x: number; y: number }>();
  for (const node of nodes) {
    const placed: { x: number; y: number } = graph.node(node.id) as { x: number; y: number };
    // dagre gives centres, React Flow top-left corners
    positions.set(node.id, { x: placed.x - NODE_WIDTH / 2, y: placed.y - NODE_HEIGHT / 2 });
  }
  return positions;
}

function ComponentBox({ data }: NodeProps<ComponentNode>): ReactNode {
  const { node, counts } = data;
  return (
    <div className={`component component-${node.type.toLowerCase()}`} data-component={node.id}>
      <Handle type="target" position={Position.Left} />
      <div className="component-name">{node.label}</div>
      <div className="component-kind">{node.kind}</div>
      <div className="component-counts" aria-label={`${node.label} counts`}>
        in <b data-count="in">{counts?.in ?? 0}</b> · out <b data-count="out">{counts?.out ?? 0}</b> · failed <b data-count="failed">{counts?.failed ?? 0}</b>
        <br />
        retried <b data-count="retried">{counts?.retried ?? 0}</b> · queued <b data-count="queued">{counts?.queued ?? 0}</b>
      </div>
      {counts?.lastError === undefined || counts.lastError === '' ? null : (
        <div className="component-error" title={counts.lastError}>
          {counts.lastError}
        </div>
      )}
      <Handle type="source" position={Position.Right} />
    </div>
  );
}

const NODE_TYPES = { component: ComponentBox };

export function WorkflowGraph({
  nodes,
  edges,
  counts,
}: {
  nodes: readonly PictureNode[];
  edges: readonly PictureEdge[];
  counts: Readonly<Record<string, ComponentCounts>>;
}): ReactNode {
  const positions = useMemo(() => layout(nodes, edges), [nodes, edges]);
  const flowNodes = useMemo(
    (): ComponentNode[] =>
      nodes.map((node) => ({
        id: node.id,
        type: 'component',
        position: positions.get(node.id) ?? { x: 0, y: 0 },
        data: { node, counts: counts[node.id] ?? counts[node.label] },
        draggable: false,
        connectable: false,
        ariaLabel: `${node.label}, ${node.kind}`,
      })),
    [nodes, positions, counts],
  );
  const flowEdges = useMemo(
    (): Edge[] =>
      edges.map((edge, index) => ({
        id: `e${index}`,
        source: edge.from,
        target: edge.to,
        label: edge.label,
        animated: false,
        style: edge.label === 'failures' ? { strokeDasharray: '6 4' } : undefined,
      })),
    [edges],
  );
  return (
    <div className="graph" role="figure" aria-label="The workflow's components and links with their live counts">
      <ReactFlow nodes={flowNodes} edges={flowEdges} nodeTypes={NODE_TYPES} fitView nodesConnectable={false} nodesDraggable={false} minZoom={0.2}>
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
