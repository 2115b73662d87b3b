import { basename } from 'node:path';
import { type WorkflowConfiguration } from '@loom/domain';
import { workflowPicture } from './workflow-picture.js';

/** The first and last lines around the generated pictures of the examples in the README. */
export const PICTURES_START = '<!-- workflow-pictures: generated from examples/*.workflow.{json,yaml} by `npm run -w @loom/cli readme`; do not edit -->';
export const PICTURES_END = '<!-- end of workflow-pictures -->';

/** One example: its file path (relative to the repository) and its workflow. */
export interface Example {
  readonly file: string;
  readonly workflow: WorkflowConfiguration;
}

/** The Markdown of every example's picture, in the order given: a heading with the file, then a Mermaid block. */
export function picturesMarkdown(examples: readonly Example[]): string {
  return examples
    .map(({ file, workflow }) => `**${basename(file)}** (\`loom workflow show ${file}\`)\n\n\`\`\`mermaid\n${workflowPicture(workflow, 'mermaid')}\`\`\``)
    .join('\n\n');
}

/** `text` (the README) with the part between the markers replaced by the pictures; undefined when a marker is missing. */
export function withWorkflowPictures(text: string, examples: readonly Example[]): string | undefined {
  const start = text.indexOf(PICTURES_START);
  const end = text.indexOf(PICTURES_END);
  if (start < 0 || end < start) return undefined;
  return `${text.slice(0, start)}${PICTURES_START}\n\n${picturesMarkdown(examples)}\n\n${text.slice(end)}`;
}
