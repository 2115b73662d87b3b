import { type GraphNode, type GraphRecord, type GraphStore } from '@loom/graph';
import { PROPER_NOUN_TYPE, type RuleQuery, SPAN_TYPES } from './rule-cypher.js';

// The rows of a rule's statement become relations: one per rule, sentence and pair of ends, the first path found as
// evidence. An end outside every named entity (a proper noun, when the rule gives no entity type) is widened to its
// span, the head with its flat and compound proper nouns, read by one statement per span relation for the batch.

/** A relation found in one document. */
export interface FoundRelation {
  readonly document: string;
  readonly rule: string;
  readonly relation: string;
  /** 0-based sentence number within the document. */
  readonly sentence: number;
  readonly subject: EntitySpan;
  readonly object: EntitySpan;
  /** The tokens of the path from the subject token to the object token, each with the dependency that reached it. */
  readonly evidence: readonly EvidenceToken[];
}

/** A named entity (or proper-noun span): its text, type and document-level character span (end exclusive). */
export interface EntitySpan {
  readonly text: string;
  readonly type: string;
  readonly start: number;
  readonly end: number;
}

/** One token of a path. */
export interface EvidenceToken {
  readonly index: number;
  readonly text: string;
  readonly lemma: string;
  readonly pos: string | null;
  readonly start: number;
  readonly end: number;
  /** The dependency from the previous token of the path: its relation and whether the path went up to a head or down to a dependent. */
  readonly step?: { readonly relation: string; readonly direction: 'up' | 'down' };
}

type Properties = GraphNode['properties'];

/** A relation as read from the rows, with the token id of each end that is a proper-noun head still to be widened. */
export interface RelationCandidate {
  readonly relation: FoundRelation;
  readonly subjectHead?: string;
  readonly objectHead?: string;
}

/**
 * The relations in a rule's result rows (each row with the index of its path's statement as `branch`), one per rule,
 * sentence and pair of ends (the shortest path, then the one of earliest tokens, is the evidence).
 */
export function relationsOf(query: RuleQuery, records: readonly GraphRecord[]): RelationCandidate[] {
  const found = new Map<string, RelationCandidate>();
  for (const record of records) {
    const hops = query.branches[Number(record['branch'])];
    const nodes = record['nodes'] as GraphNode[] | null;
    if (hops === undefined || !Array.isArray(nodes) || nodes.length !== hops.length + 1) continue;
    const specifics = (record['specifics'] ?? []) as unknown[];
    const first = nodes[0]!.properties;
    const last = nodes[nodes.length - 1]!.properties;
    const relation: FoundRelation = {
      document: text(record['doc']),
      rule: query.rule.name,
      relation: query.rule.relation,
      sentence: Number(record['sentence']),
      subject: entityOf(first),
      object: entityOf(last),
      evidence: nodes.map((node, i) => {
        const token = evidenceOf(node.properties);
        if (i === 0) return token;
        const hop = hops[i - 1]!;
        const specific = specifics[i - 1];
        const relationName = typeof specific === 'string' && specific !== '' ? `${hop.type.toLowerCase()}:${specific}` : hop.type.toLowerCase();
        return { ...token, step: { relation: relationName, direction: hop.direction } };
      }),
    };
    const key = JSON.stringify([relation.document, relation.sentence, endKey(first), endKey(last)]);
    const known = found.get(key);
    if (known === undefined || earlier(relation.evidence, known.relation.evidence)) {
      found.set(key, { relation, ...headOf('subjectHead', first), ...headOf('objectHead', last) });
    }
  }
  return [...found.values()];
}

/** Whether a path is the one to report rather than another between the same ends: the shorter, then the one of earlier tokens. */
function earlier(path: readonly EvidenceToken[], other: readonly EvidenceToken[]): boolean {
  if (path.length !== other.length) return path.length < other.length;
  for (let i = 0; i < path.length; i++) if (path[i]!.index !== other[i]!.index) return path[i]!.index < other[i]!.index;
  return false;
}

/** A named entity by its mention, a proper noun by its token. */
function endKey(properties: Properties): string {
  return text(properties['entityId'] ?? properties['id']);
}

function headOf(field: 'subjectHead' | 'objectHead', properties: Properties): Partial<Record<typeof field, string>> {
  return properties['entityId'] === undefined || properties['entityId'] === null ? { [field]: text(properties['id']) } : {};
}

/**
 * Widens each proper-noun end to its span: up to its head when it is a flat or compound proper noun of one, then the
 * head with its flat and compound proper nouns (the run of consecutive tokens around the head). Paths that reached
 * two words of one span become one relation. Two statements per span relation, for the whole batch, when any end
 * needs them.
 */
export async function withProperNounSpans(store: GraphStore, candidates: readonly RelationCandidate[], signal?: AbortSignal): Promise<FoundRelation[]> {
  const ends = [...new Set(candidates.flatMap((candidate) => [candidate.subjectHead, candidate.objectHead].filter((end) => end !== undefined)))];
  if (ends.length === 0) return candidates.map((candidate) => candidate.relation);
  const options = { columns: ['from', 'to'], ...(signal === undefined ? {} : { signal }) };
  const heads = new Map<string, Properties>();
  const parts = new Map<string, Properties[]>();
  for (const type of SPAN_TYPES) {
    const rows = await store.run(
      `UNWIND $ends AS wanted MATCH (h:TagOccurrence)-[:${type}]->(u:TagOccurrence) WHERE u.id = wanted AND h.upos = 'PROPN' RETURN u.id AS from, h AS to`,
      { ends },
      options,
    );
    for (const row of rows) heads.set(text(row['from']), (row['to'] as GraphNode).properties);
  }
  const spanHeads = [...new Set(ends.map((end) => text(heads.get(end)?.['id'] ?? end)))];
  for (const type of SPAN_TYPES) {
    const rows = await store.run(
      `UNWIND $heads AS wanted MATCH (h:TagOccurrence)-[:${type}]->(u:TagOccurrence) WHERE h.id = wanted AND u.upos = 'PROPN' RETURN h.id AS from, u AS to`,
      { heads: spanHeads },
      options,
    );
    for (const row of rows) parts.set(text(row['from']), [...(parts.get(text(row['from'])) ?? []), (row['to'] as GraphNode).properties]);
  }
  const widen = (end: string, token: EvidenceToken): EntitySpan => {
    const head = heads.get(end);
    const headToken = head === undefined ? token : evidenceOf(head);
    return spanOf(headToken, parts.get(text(head?.['id'] ?? end)) ?? []);
  };
  const widened = new Map<string, FoundRelation>();
  for (const { relation, subjectHead, objectHead } of candidates) {
    const subject = subjectHead === undefined ? relation.subject : widen(subjectHead, relation.evidence[0]!);
    const object = objectHead === undefined ? relation.object : widen(objectHead, relation.evidence[relation.evidence.length - 1]!);
    if (subject.start === object.start) continue; // both ends in one span
    const key = JSON.stringify([relation.document, relation.rule, relation.sentence, subject.start, object.start]);
    const known = widened.get(key);
    if (known === undefined || earlier(relation.evidence, known.evidence)) widened.set(key, { ...relation, subject, object });
  }
  return [...widened.values()];
}

function spanOf(head: EvidenceToken, parts: readonly Properties[]): EntitySpan {
  const tokens = [head, ...parts.map(evidenceOf)].sort((a, b) => a.index - b.index);
  let from = tokens.findIndex((token) => token.index === head.index);
  let to = from;
  while (from > 0 && tokens[from - 1]!.index === tokens[from]!.index - 1) from--;
  while (to < tokens.length - 1 && tokens[to + 1]!.index === tokens[to]!.index + 1) to++;
  const run = tokens.slice(from, to + 1);
  const spanText = run.map((token, i) => (i > 0 && token.start > run[i - 1]!.end ? ' ' : '') + token.text).join('');
  return { text: spanText, type: PROPER_NOUN_TYPE, start: run[0]!.start, end: run[run.length - 1]!.end };
}

function entityOf(properties: Properties): EntitySpan {
  const isEntity = properties['ne'] !== undefined && properties['ne'] !== null;
  return {
    text: text(properties['entityValue'] ?? properties['value']),
    type: isEntity ? text(properties['ne']) : PROPER_NOUN_TYPE,
    start: Number(properties['entityStart'] ?? properties['startPosition']),
    end: Number(properties['entityEnd'] ?? properties['endPosition']),
  };
}

function evidenceOf(properties: Properties): EvidenceToken {
  const pos = properties['pos'];
  return {
    index: Number(properties['tokenIndex']),
    text: text(properties['value']),
    lemma: text(properties['lemma']),
    pos: typeof pos === 'string' ? pos : null,
    start: Number(properties['startPosition']),
    end: Number(properties['endPosition']),
  };
}

/** A graph value as text: strings as they are, anything else as JSON. */
function text(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
}
