import { stringify } from 'yaml';
import { appendJsonPath, ValidationError } from '@loom/foundation';
import { unknownKindDescription } from './catalog-definitions.js';
import { componentCatalog, findComponentDefinition, optionConstraint, RESOURCE_KINDS, SKILL_CAPABILITY_QUALIFIED_NAMES } from './catalog.js';
import { componentKindName, LINK_ARROW, shortKindName } from './compact-workflow.js';
import type { ComponentDefinition, OptionDefinition, SkillCapabilityName } from './workflow.js';

/** The skill loom's own skill services register for each capability (`loom serve --with-skills`, `npm start`). */
export const DEFAULT_SKILL_NAMES: Readonly<Record<SkillCapabilityName, string>> = Object.freeze({
  ENTITY_EXTRACTION: 'annotation',
  KEYWORD_EXTRACTION: 'keywords',
  WEB_DATA_EXTRACTION: 'web-data',
  PDF_PARSING: 'pdf',
});

/** Name of the resource a scaffold gives the kinds that need a graph: the embedded graph of `loom serve`. */
export const SCAFFOLD_GRAPH_RESOURCE = 'Graph';

/** What a scaffold is made of. */
export interface ScaffoldRequest {
  /** The workflow's name. */
  readonly name: string;
  /** Component kinds, short (`source.Inlet`) or qualified, linked in this order. */
  readonly kinds: readonly string[];
  /** Where the compact JSON Schema is, for the editor comment at the top (a path or a URL); none when absent. */
  readonly schema?: string;
}

/**
 * A compact YAML workflow with one component of each kind, linked in the order given, each option written at its
 * default with a comment saying what it is; kinds that need a graph use an embedded graph resource, skill kinds the
 * skill loom's own services register. An unknown kind is a ValidationError naming `kinds[i]`.
 */
export function scaffoldCompactWorkflow(request: ScaffoldRequest): string {
  const definitions = request.kinds.map((kind, index) => {
    const definition = findComponentDefinition(componentKindName(kind));
    if (definition === undefined) {
      const known = componentCatalog().map((catalogKind) => shortKindName(catalogKind.qualifiedName));
      throw ValidationError.of(appendJsonPath('kinds', index), unknownKindDescription('component', kind, known), 'UNKNOWN_COMPONENT');
    }
    return definition;
  });
  const names = uniqueNames(definitions);
  const lines: string[] = [];
  if (request.schema !== undefined) lines.push(`# yaml-language-server: $schema=${request.schema}`);
  lines.push(`name: ${scalar(request.name)}`);
  if (definitions.some((definition) => definition.resource !== null)) {
    lines.push(
      'resources:',
      `  ${SCAFFOLD_GRAPH_RESOURCE}:`,
      `    kind: ${shortKindName(RESOURCE_KINDS.AGE_DATABASE)}  # the embedded graph of loom serve; graph.Neo4jDatabase for Neo4j`,
      `    parameters: { host: embedded, user: postgres, graph: ${graphName(request.name)} }`,
    );
  }
  lines.push('components:');
  definitions.forEach((definition, index) => lines.push(...componentLines(names[index] as string, definition)));
  if (names.length > 1) lines.push('links:', `  - ${names.join(` ${LINK_ARROW} `)}`);
  return `${lines.join('\n')}\n`;
}

function componentLines(name: string, definition: ComponentDefinition): string[] {
  const lines = [
    `  ${scalar(name)}:`,
    `    kind: ${shortKindName(definition.qualifiedName)}  # ${definition.name}, a ${definition.type.toLowerCase()} component`,
  ];
  if (definition.resource !== null) lines.push(`    resource: ${SCAFFOLD_GRAPH_RESOURCE}  # a resource under resources`);
  if (definition.capabilityQualifiedName !== null) {
    const capability = (Object.keys(SKILL_CAPABILITY_QUALIFIED_NAMES) as SkillCapabilityName[]).find(
      (key) => SKILL_CAPABILITY_QUALIFIED_NAMES[key] === definition.capabilityQualifiedName,
    );
    lines.push(`    skill: ${capability === undefined ? 'SKILL' : DEFAULT_SKILL_NAMES[capability]}  # the registered skill it calls (loom skill list)`);
  }
  if (definition.options.length === 0) return lines;
  const values = definition.options.map((option) => scalar(option.defaultValue));
  const width = Math.max(...definition.options.map((option, index) => option.name.length + (values[index] as string).length));
  lines.push('    options:');
  definition.options.forEach((option, index) => {
    const written = `${option.name}: ${values[index] as string}`;
    lines.push(`      ${written.padEnd(width + 2)}  # ${optionComment(definition.qualifiedName, option)}`);
  });
  return lines;
}

function optionComment(kind: string, option: OptionDefinition): string {
  const allowed = optionConstraint(kind, option.name)?.allowedValues;
  const parts = [option.label];
  if (option.type === 'COMPONENT_SELECTION_FAILURE_HANDLER') parts.push('the name of a component that takes the failures');
  if (allowed !== undefined) parts.push(`one of ${allowed.join(', ')}`);
  if (option.required && option.defaultValue === null) parts.push(`required: set it (${option.type})`);
  return parts.join('; ');
}

/** Component names from their kinds' names (`Logger`, `Logger 2`...). */
function uniqueNames(definitions: readonly ComponentDefinition[]): string[] {
  const seen = new Map<string, number>();
  return definitions.map((definition) => {
    const count = (seen.get(definition.name) ?? 0) + 1;
    seen.set(definition.name, count);
    return count === 1 ? definition.name : `${definition.name} ${count}`;
  });
}

/** A value as one line of YAML (quoted when plain text would read as something else). */
function scalar(value: unknown): string {
  return stringify(value, { lineWidth: 0 }).trimEnd();
}

/** An AGE graph name from the workflow's name: letters, digits and _, at least 3 characters, not starting with a digit. */
function graphName(workflowName: string): string {
  const cleaned = workflowName
    .toLowerCase()
    .replaceAll(/[^a-z0-9_]+/g, '_')
    .replaceAll(/^_+|_+$/g, '')
    .slice(0, 50);
  return /^[a-z_][a-z0-9_]{2,}$/.test(cleaned) ? cleaned : `graph_${cleaned}`.slice(0, 50).padEnd(3, '_');
}
