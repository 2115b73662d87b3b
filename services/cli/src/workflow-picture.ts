// A workflow drawn as text: Mermaid (which GitHub renders in Markdown) or Graphviz DOT (which
// `dot` turns into SVG). Links are solid arrows; a component's failure handler is a dashed arrow
// labelled "failures". Each box names the component and its kind, and with a run's counters, its
// messages in, out and failed. The boxes and arrows are @loom/domain's workflowGraph, which the
// console lays out too.

import { shownComponentName, type WorkflowConfiguration, workflowGraph } from '@loom/domain';

/** The text formats a workflow is drawn in. */
export const PICTURE_FORMATS = ['mermaid', 'dot'] as const;
/** A text format of a workflow's picture. */
export type PictureFormat = (typeof PICTURE_FORMATS)[number];

/** A running component's counters, as `loom workflow status` shows them. */
export interface ComponentCounts {
  readonly messagesIn: number;
  readonly messagesOut: number;
  readonly messagesFailed: number;
}

/** What the picture draws: boxes and arrows, independent of the format. */
interface Box {
  readonly id: string;
  readonly lines: readonly string[];
  readonly shape: 'source' | 'store' | 'sink' | 'step';
}

interface Arrow {
  readonly from: string;
  readonly to: string;
  readonly failures: boolean;
}

function boxesAndArrows(workflow: WorkflowConfiguration, counts?: ReadonlyMap<string, ComponentCounts>): { boxes: Box[]; arrows: Arrow[] } {
  const graph = workflowGraph(workflow);
  const boxes = graph.nodes.map((node): Box => {
    const shape = node.type === 'SOURCE' ? 'source' : node.type === 'SINK' ? 'sink' : node.type === 'PERSISTENCE' ? 'store' : 'step';
    const count = counts?.get(node.name);
    const countLine = count === undefined ? [] : [`in ${count.messagesIn} · out ${count.messagesOut} · failed ${count.messagesFailed}`];
    return { id: node.id, shape, lines: [node.label, node.kind, ...countLine] };
  });
  const arrows = graph.edges.map((edge): Arrow => ({ from: edge.from, to: edge.to, failures: edge.label === 'failures' }));
  return { boxes, arrows };
}

/** Mermaid flowchart text: quotes and angle brackets as entities, lines joined with <br/>. */
function mermaidLabel(lines: readonly string[]): string {
  const escaped = lines.map((line) => line.replace(/&/g, '#amp;').replace(/"/g, '#quot;').replace(/</g, '#lt;').replace(/>/g, '#gt;'));
  return `"${escaped.join('<br/>')}"`;
}

const MERMAID_SHAPES: Record<Box['shape'], [string, string]> = { source: ['([', '])'], store: ['[(', ')]'], sink: ['[[', ']]'], step: ['[', ']'] };

function mermaid({ boxes, arrows }: { boxes: Box[]; arrows: Arrow[] }): string {
  const lines = ['flowchart LR'];
  for (const box of boxes) {
    const [open, close] = MERMAID_SHAPES[box.shape];
    lines.push(`  ${box.id}${open}${mermaidLabel(box.lines)}${close}`);
  }
  for (const arrow of arrows) lines.push(arrow.failures ? `  ${arrow.from} -. failures .-> ${arrow.to}` : `  ${arrow.from} --> ${arrow.to}`);
  return `${lines.join('\n')}\n`;
}

/** A DOT string literal. */
function dotString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

const DOT_SHAPES: Record<Box['shape'], string> = { source: 'oval', store: 'cylinder', sink: 'box3d', step: 'box' };

function dot(workflow: WorkflowConfiguration, { boxes, arrows }: { boxes: Box[]; arrows: Arrow[] }): string {
  const lines = [
    `digraph ${dotString(shownComponentName(workflow.name))} {`,
    '  rankdir=LR;',
    '  node [fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=10];',
  ];
  for (const box of boxes) lines.push(`  ${box.id} [label=${dotString(box.lines.join('\n'))}, shape=${DOT_SHAPES[box.shape]}];`);
  for (const arrow of arrows) lines.push(`  ${arrow.from} -> ${arrow.to}${arrow.failures ? ' [style=dashed, label="failures"]' : ''};`);
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/** A workflow drawn as Mermaid or DOT text; with `counts` (by component name), each box carries its counters. */
export function workflowPicture(workflow: WorkflowConfiguration, format: PictureFormat, counts?: ReadonlyMap<string, ComponentCounts>): string {
  const drawn = boxesAndArrows(workflow, counts);
  return format === 'mermaid' ? mermaid(drawn) : dot(workflow, drawn);
}
