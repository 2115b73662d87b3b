import { Document, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument, visit } from 'yaml';
import { formatJsonPath, parseJsonText, ValidationError } from '@loom/foundation';
import { workflowToCompact } from './compact-from-full.js';
import { type CompactWorkflow, workflowFromCompact } from './compact-workflow.js';
import type { WorkflowConfiguration } from './workflow.js';
import { parseWorkflow } from './workflow-json.js';

/** The two ways a workflow file is written: the specification's full form, or the compact form. */
export type WorkflowForm = 'full' | 'compact';

/** A workflow read from a file, and the form the file was written in. */
export interface ReadWorkflow {
  readonly workflow: WorkflowConfiguration;
  readonly form: WorkflowForm;
}

// aliases may repeat a node, but a few hundred repetitions are no workflow: an alias bomb is refused
const MAX_ALIAS_COUNT = 100;

/**
 * Reads a workflow file in either form. `.yaml` and `.yml` files, and any text that is not a JSON object, are YAML;
 * the rest is JSON. A file whose `components` (or resources) is a list is the full form (read as parseWorkflowJson
 * reads it); one whose `components` is a map by name is the compact form, converted and checked against the catalog, every
 * violation naming the compact file's field and its line (`(line 7)`, or `(line 7 of etl.yaml)` with a file name).
 * ValidationError.
 */
export function readWorkflowText(text: string, fileName = ''): ReadWorkflow {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const yaml = /\.ya?ml$/i.test(fileName) || !body.trimStart().startsWith('{');
  // JSON is read as JSON first, so a malformed file is told as JSON (line, column), not as YAML
  const value = yaml ? undefined : parseJsonText(body);
  if (value !== undefined && isFullForm(value)) return { workflow: parseWorkflow(value), form: 'full' };
  const { value: parsed, lines } = parseYamlWithLines(body);
  if (isFullForm(parsed)) return { workflow: parseWorkflow(parsed), form: 'full' };
  return { workflow: withLines(lines, () => workflowFromCompact(parsed), fileName), form: 'compact' };
}

/** Reads the text of a compact workflow file (YAML, or JSON, which YAML includes) into the full form; see readWorkflowText. */
export function parseCompactWorkflowText(text: string): WorkflowConfiguration {
  const { value, lines } = parseYamlWithLines(text.startsWith('\uFEFF') ? text.slice(1) : text);
  return withLines(lines, () => workflowFromCompact(value));
}

/** Writes a workflow in the compact form: YAML (multi-line scripts and queries as literal blocks), or 2-space JSON. */
export function serializeCompactWorkflow(workflow: WorkflowConfiguration, format: 'yaml' | 'json' = 'yaml'): string {
  return compactText(workflowToCompact(workflow), format);
}

/** The text of a compact workflow value. */
export function compactText(compact: CompactWorkflow, format: 'yaml' | 'json' = 'yaml'): string {
  if (format === 'json') return `${JSON.stringify(compact, null, 2)}\n`;
  const document = new Document(compact, { aliasDuplicateObjects: false });
  // short lists and maps of single words (entity labels, skill inputs, connection parameters) go on one line
  visit(document, {
    Map: (_key, node, path) => {
      if (path.length > 2 && node.items.every((pair) => isShortScalar(pair.value)) && flowWidth(node.toJSON()) <= MAX_FLOW_WIDTH) node.flow = true;
    },
    Seq: (_key, node) => {
      if (node.items.every(isShortScalar) && flowWidth(node.toJSON()) <= MAX_FLOW_WIDTH) node.flow = true;
    },
  });
  return document.toString({ lineWidth: 0, blockQuote: 'literal', flowCollectionPadding: false });
}

/** How wide a collection written on one line may be. */
const MAX_FLOW_WIDTH = 72;

function isShortScalar(node: unknown): boolean {
  return isScalar(node) && !(typeof node.value === 'string' && /\s/.test(node.value));
}

function flowWidth(value: unknown): number {
  return JSON.stringify(value).length;
}

/** Whether a parsed file is the full form: its components, resources or workflow resources are lists (maps in the compact form). */
function isFullForm(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { components, resources, workflowResources } = value as Record<string, unknown>;
  return [components, resources, workflowResources].some((list) => Array.isArray(list));
}

/** The first line of each field of a YAML document, by JSON path (`components.parse.options`). */
export type LineIndex = ReadonlyMap<string, number>;

/** Parses YAML 1.2 (keys unique, no custom tags); a syntax error is a ValidationError naming line and column, never the text. */
export function parseYamlWithLines(text: string): { value: unknown; lines: LineIndex } {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, version: '1.2' });
  const [error] = document.errors;
  if (error !== undefined) {
    // the parser's message quotes the line, which may hold a password: only its code and position are told
    const { line, col } = lineCounter.linePos(error.pos[0]);
    const description = `malformed YAML at line ${line}, column ${col}: ${error.code.toLowerCase().replaceAll('_', ' ')}`;
    throw new ValidationError([{ field: '', description, reason: 'MALFORMED_YAML' }]);
  }
  const lines = new Map<string, number>();
  indexLines(document.contents, [], lines, lineCounter);
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch {
    throw new ValidationError([{ field: '', description: `more than ${MAX_ALIAS_COUNT} alias expansions`, reason: 'MALFORMED_YAML' }]);
  }
  return { value, lines };
}

function indexLines(node: Node | null, path: PropertyKey[], lines: Map<string, number>, counter: LineCounter): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      const at = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
      const keyPath = [...path, key];
      if (at !== undefined) lines.set(formatJsonPath(keyPath), counter.linePos(at).line);
      indexLines(pair.value as Node | null, keyPath, lines, counter);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => {
      const itemPath = [...path, index];
      const at = (item as Node | null)?.range?.[0];
      if (at !== undefined) lines.set(formatJsonPath(itemPath), counter.linePos(at).line);
      indexLines(item as Node | null, itemPath, lines, counter);
    });
  }
}

/** Runs a conversion; the violations it throws get the line of their field (or of the nearest field above it), in `fileName` when given. */
function withLines<T>(lines: LineIndex, convert: () => T, fileName = ''): T {
  try {
    return convert();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(
      error.violations.map((violation) => {
        const line = lineOf(lines, violation.field);
        if (line === undefined) return violation;
        return { ...violation, description: `${violation.description} (line ${line}${fileName === '' ? '' : ` of ${fileName}`})` };
      }),
      { cause: error },
    );
  }
}

/** The line of a field, or of the nearest field above it that has one. */
export function lineOf(lines: LineIndex, field: string): number | undefined {
  let best: { length: number; line: number } | undefined;
  for (const [path, line] of lines) {
    const matches = field === path || field.startsWith(`${path}.`) || field.startsWith(`${path}[`);
    if (matches && (best === undefined || path.length > best.length)) best = { length: path.length, line };
  }
  return best?.line;
}
