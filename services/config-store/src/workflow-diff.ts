import { FILE_HEADERS_ONLY, formatPatch, structuredPatch } from 'diff';
import {
  parseStoredName,
  redactSecretValues,
  serializeCompactWorkflow,
  type VariableReferences,
  withVariableReferences,
  type WorkflowConfiguration,
} from '@loom/domain';

/** A unified diff and how many lines it adds and removes. */
export interface CompactDiff {
  readonly diff: string;
  readonly linesAdded: number;
  readonly linesRemoved: number;
}

/** The workflow name without its `_<uuid>`. */
export function baseNameOf(name: string): string {
  return parseStoredName(name)?.base ?? name;
}

/**
 * The compact YAML form of a workflow as `loom workflow export --compact` writes it for a folder: `$$` references
 * written back as pushed, any other secret value shown as `(secret)`, never its text.
 */
export function compactFormOf(configuration: WorkflowConfiguration, references: VariableReferences): string {
  const { workflow } = withVariableReferences(configuration, references, baseNameOf(configuration.name));
  return serializeCompactWorkflow(redactSecretValues(workflow), 'yaml');
}

/** A unified diff (three lines of context) from one text to another; empty when they are equal. */
export function diffTexts(fromLabel: string, fromText: string, toLabel: string, toText: string): CompactDiff {
  if (fromText === toText) return { diff: '', linesAdded: 0, linesRemoved: 0 };
  const patch = structuredPatch(fromLabel, toLabel, fromText, toText, undefined, undefined, { context: 3 });
  let linesAdded = 0;
  let linesRemoved = 0;
  for (const hunk of patch.hunks) {
    for (const line of hunk.lines) {
      if (line.startsWith('+')) linesAdded++;
      else if (line.startsWith('-')) linesRemoved++;
    }
  }
  return { diff: formatPatch(patch, FILE_HEADERS_ONLY), linesAdded, linesRemoved };
}
