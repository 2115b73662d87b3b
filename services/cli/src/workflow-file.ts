import { readFileSync } from 'node:fs';
import { readWorkflowText, type ReadWorkflow } from '@loom/domain';
import { UsageError } from './usage-error.js';
import { inputPath } from './cli-io.js';

/**
 * Reads a workflow file in the full form (`.workflow.json`) or the compact one (YAML or JSON), told apart by its
 * extension and content; a malformed or wrong file is a ValidationError naming the field (and, compact, its line).
 */
export function readWorkflowFile(file: string): ReadWorkflow {
  return readWorkflowText(readWorkflowFileText(file), file);
}

/** The text of a workflow file, unread; a file that cannot be read is a UsageError naming it and why. */
export function readWorkflowFileText(file: string): string {
  try {
    return readFileSync(inputPath(file), 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}
