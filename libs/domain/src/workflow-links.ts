// The checks of a workflow's graph: what each link joins, where messages can flow, which fields
// reach a component. Everything a rule compares comes from the catalog (message types, the fields
// a kind adds or needs), never from the definitions copied into the workflow file.

import { appendJsonPath, type FieldViolation } from '@loom/foundation';
import { componentCatalog, componentMessageFields } from './catalog.js';
import { MESSAGE_TYPES, messageTypeAccepts } from './message-types.js';
import type { ComponentDefinition, Link, WorkflowConfiguration } from './workflow.js';

/** Reason codes of the violations linkViolations reports. */
export type LinkViolationReason =
  | 'INCOMPATIBLE_LINK'
  | 'LINK_INTO_SOURCE'
  | 'LINK_OUT_OF_SINK'
  | 'LINK_CYCLE'
  | 'FAILURE_HANDLER_TAKES_NO_FAILURES'
  | 'UNREACHABLE_COMPONENT'
  | 'MISSING_UPSTREAM';

/** One violation of a link rule. */
export interface LinkViolation extends FieldViolation {
  readonly reason: LinkViolationReason;
}

/** A component of the workflow whose kind the catalog knows. */
interface Known {
  readonly index: number;
  readonly name: string;
  readonly definition: Readonly<ComponentDefinition>;
}

/** How a link is named in every violation about it: `(parse -> write)`. */
export function linkLabel(link: Link): string {
  return `(${link.from} -> ${link.to})`;
}

/**
 * Checks the links of a workflow: the two ends' message types fit; nothing links into a source
 * or out of a sink; no cycle; each failure handler takes failure messages; every component is
 * reached from a source (by links or as a failure handler); a component that needs a field
 * (RBRE: `node_id`) is downstream of a kind that adds it. Links naming no component, and
 * components of kinds the catalog does not know, are left to the other checks.
 */
export function linkViolations(
  workflow: WorkflowConfiguration,
  definitionOf: (qualifiedName: string) => Readonly<ComponentDefinition> | undefined,
): LinkViolation[] {
  const known = new Map<string, Known>();
  workflow.components.forEach((component, index) => {
    const definition = definitionOf(component.component.qualifiedName);
    if (definition !== undefined && !known.has(component.name)) known.set(component.name, { index, name: component.name, definition });
  });
  const links = workflow.links.map((link, index) => ({ link, index, from: known.get(link.from), to: known.get(link.to) }));
  const graph = links.filter((entry) => entry.from !== undefined && entry.to !== undefined && entry.link.from !== entry.link.to);
  const handlers = failureHandlers(workflow, known);
  return [
    ...links.flatMap(({ link, index, from, to }) => endViolations(link, index, from, to)),
    ...cycleViolations(graph.map(({ link, index }) => ({ link, index }))),
    ...handlers.flatMap(handlerViolation),
    ...reachViolations(workflow, known, handlers),
    ...upstreamViolations(known, graph),
  ];
}

/** The rules about one link's two ends: not into a source, not out of a sink, message types that fit. */
function endViolations(link: Link, index: number, from: Known | undefined, to: Known | undefined): LinkViolation[] {
  const field = `links[${index}]`;
  const label = linkLabel(link);
  const violations: LinkViolation[] = [];
  if (to?.definition.inputType === MESSAGE_TYPES.NONE) {
    violations.push({
      field,
      reason: 'LINK_INTO_SOURCE',
      description: `${label} links into ${to.name}, ${withArticle(to.definition.name)}: a source takes no messages from links`,
    });
  }
  if (from?.definition.outputType === MESSAGE_TYPES.NONE) {
    violations.push({
      field,
      reason: 'LINK_OUT_OF_SINK',
      description: `${label} links out of ${from.name}, ${withArticle(from.definition.name)}: a sink sends no messages on`,
    });
  }
  if (violations.length > 0 || from === undefined || to === undefined) return violations;
  if (!messageTypeAccepts(to.definition.inputType, from.definition.outputType)) {
    violations.push({
      field,
      reason: 'INCOMPATIBLE_LINK',
      description: `${label} joins message types that do not fit: ${from.definition.name} sends ${from.definition.outputType}, ${to.definition.name} takes ${to.definition.inputType}`,
    });
  }
  return violations;
}

/** One link closing each cycle, found by a depth-first walk in link order; the violation spells the cycle out. */
function cycleViolations(links: readonly { link: Link; index: number }[]): LinkViolation[] {
  const outgoing = new Map<string, { link: Link; index: number }[]>();
  for (const entry of links) outgoing.set(entry.link.from, [...(outgoing.get(entry.link.from) ?? []), entry]);
  const state = new Map<string, 'open' | 'done'>();
  const violations: LinkViolation[] = [];
  for (const start of outgoing.keys()) {
    if (state.has(start)) continue;
    // an explicit stack, so a long chain of components cannot overflow the call stack
    const path: { name: string; next: number }[] = [{ name: start, next: 0 }];
    state.set(start, 'open');
    while (path.length > 0) {
      const top = path[path.length - 1] as { name: string; next: number };
      const entry = outgoing.get(top.name)?.[top.next];
      if (entry === undefined) {
        state.set(top.name, 'done');
        path.pop();
        continue;
      }
      top.next += 1;
      const target = entry.link.to;
      if (state.get(target) === 'open') {
        const cycle = [...path.slice(path.findIndex((step) => step.name === target)).map((step) => step.name), target];
        violations.push({
          field: `links[${entry.index}]`,
          reason: 'LINK_CYCLE',
          description: `${linkLabel(entry.link)} closes a cycle: ${cycle.join(' -> ')}`,
        });
      } else if (!state.has(target)) {
        state.set(target, 'open');
        path.push({ name: target, next: 0 });
      }
    }
  }
  return violations.sort((a, b) => linkIndex(a) - linkIndex(b));
}

function linkIndex(violation: FieldViolation): number {
  return Number(/^links\[(\d+)\]/.exec(violation.field)?.[1] ?? 0);
}

/** A component's failure_handler option naming another known component. */
interface HandlerUse {
  readonly component: Known;
  readonly handler: Known;
  readonly field: string;
}

function failureHandlers(workflow: WorkflowConfiguration, known: ReadonlyMap<string, Known>): HandlerUse[] {
  return workflow.components.flatMap((component, index) => {
    const user = known.get(component.name);
    if (user === undefined || user.index !== index) return [];
    return component.options.flatMap((option, j) => {
      const handler = option.name === 'failure_handler' && typeof option.value === 'string' ? known.get(option.value) : undefined;
      if (handler === undefined || handler.name === component.name) return [];
      return [{ component: user, handler, field: appendJsonPath(appendJsonPath(appendJsonPath(`components[${index}]`, 'options'), j), 'value') }];
    });
  });
}

function handlerViolation({ component, handler, field }: HandlerUse): LinkViolation[] {
  if (messageTypeAccepts(handler.definition.inputType, MESSAGE_TYPES.FAILURE)) return [];
  return [
    {
      field,
      reason: 'FAILURE_HANDLER_TAKES_NO_FAILURES',
      description: `${component.name}: its failure handler ${handler.name}, ${withArticle(handler.definition.name)}, takes ${handler.definition.inputType}, not failure messages (${MESSAGE_TYPES.FAILURE})`,
    },
  ];
}

/**
 * Every known component reached from a source, along links and from a reached component to its failure handler. A
 * component of an unknown kind (reported already) counts as a source, so one typo does not make everything after it unreachable.
 */
function reachViolations(workflow: WorkflowConfiguration, known: ReadonlyMap<string, Known>, handlers: readonly HandlerUse[]): LinkViolation[] {
  const next = new Map<string, string[]>();
  const add = (from: string, to: string): void => void next.set(from, [...(next.get(from) ?? []), to]);
  for (const link of workflow.links) add(link.from, link.to);
  for (const { component, handler } of handlers) add(component.name, handler.name);
  const reached = new Set<string>();
  const pending = workflow.components
    .filter((component) => {
      const kind = known.get(component.name)?.definition;
      return kind === undefined || kind.inputType === MESSAGE_TYPES.NONE;
    })
    .map((component) => component.name);
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (reached.has(name)) continue;
    reached.add(name);
    pending.push(...(next.get(name) ?? []));
  }
  return [...known.values()]
    .filter((component) => !reached.has(component.name))
    .map((component) => ({
      field: `components[${component.index}]`,
      reason: 'UNREACHABLE_COMPONENT' as const,
      description: `${component.name} is reached from no source: link it downstream of a source, or name it as a failure handler of a component that is`,
    }));
}

/** A component that needs a message field has, somewhere upstream along links, a component of a kind that adds it. */
function upstreamViolations(known: ReadonlyMap<string, Known>, links: readonly { link: Link }[]): LinkViolation[] {
  const upstream = new Map<string, string[]>();
  for (const { link } of links) upstream.set(link.to, [...(upstream.get(link.to) ?? []), link.from]);
  const addedAbove = (name: string, field: string): boolean => {
    const seen = new Set<string>([name]);
    const pending = [...(upstream.get(name) ?? [])];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (seen.has(next)) continue;
      seen.add(next);
      const kind = known.get(next)?.definition.qualifiedName;
      if (kind !== undefined && componentMessageFields(kind).adds.includes(field)) return true;
      pending.push(...(upstream.get(next) ?? []));
    }
    return false;
  };
  return [...known.values()].flatMap((component) =>
    componentMessageFields(component.definition.qualifiedName)
      .needs.filter((field) => !addedAbove(component.name, field))
      .map((field) => ({
        field: `components[${component.index}]`,
        reason: 'MISSING_UPSTREAM' as const,
        description: `${component.name}: ${withArticle(component.definition.name)} needs the message field ${field}, which ${kindsAdding(field)} adds: link it downstream of one`,
      })),
  );
}

/** The kinds of the catalog that add a field, for the violation's description. */
function kindsAdding(field: string): string {
  const names = componentCatalog()
    .filter((definition) => componentMessageFields(definition.qualifiedName).adds.includes(field))
    .map((definition) => withArticle(definition.name));
  return names.length === 0 ? 'no kind' : names.join(' or ');
}

/** `a Logger`, `an Inlet`. */
function withArticle(kindName: string): string {
  return `${/^[AEIOU]/i.test(kindName) ? 'an' : 'a'} ${kindName}`;
}
