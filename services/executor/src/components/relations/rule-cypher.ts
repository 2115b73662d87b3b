import { type RelationRule, type TokenConstraint } from '@loom/domain';
import { type GraphNode, type GraphRecord } from '@loom/graph';

// Rules become Cypher over the token graph (token-graph.ts), one statement per rule, the same text on Neo4j and AGE.
// The one-sentence limit is part of the pattern, not a property of the data: every token of the path, the two
// entity tokens included, must hang off the same (:Sentence) by SENTENCE_TAG_OCCURRENCE, so even a dependency that
// crosses sentences (which the writer never makes) cannot join two sentences.

/** Lemmas that negate the token they depend on (UD English: `not`/`n't`/`never` as advmod, `no` as det). */
export const NEGATION_LEMMAS = ['not', "n't", 'never', 'no', 'neither', 'nor'] as const;
/** Relations by which a negation attaches: UD's advmod and det, and `neg` of older CoreNLP output. */
const NEGATION_RELATIONS = ['ADVMOD', 'DET', 'NEG'] as const;

/** A rule's statement, its parameters (besides `$ids`) and the shape of its rows. */
export interface RuleQuery {
  readonly rule: RelationRule;
  readonly cypher: string;
  readonly parameters: Record<string, unknown>;
  readonly columns: readonly string[];
}

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

/** A named entity: its text, type and document-level character span (end exclusive). */
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

/** Builds the statement of one rule: `$ids` holds the AnnotatedText ids to search. */
export function ruleQuery(rule: RelationRule): RuleQuery {
  const parameters: Record<string, unknown> = {};
  const parameter = (value: unknown): string => {
    const name = `p${Object.keys(parameters).length}`;
    parameters[name] = value;
    return `$${name}`;
  };
  const tokens = rule.path.length + 1;
  const t = (i: number): string => `t${i}`;
  const patterns: string[] = ['(d:AnnotatedText)-[:CONTAINS_SENTENCE]->(s:Sentence)'];
  const conditions: string[] = ['d.id = wanted'];
  for (let i = 0; i < tokens; i++) patterns.push(`(s)-[:SENTENCE_TAG_OCCURRENCE]->(${t(i)}:TagOccurrence)`);

  rule.path.forEach((step, index) => {
    const r = `r${index + 1}`;
    const relations = Array.isArray(step.relation) ? step.relation : [step.relation];
    const typed = relations.length === 1 ? `:${baseOf(relations[0]!)}` : '';
    patterns.push(step.direction === 'down' ? `(${t(index)})-[${r}${typed}]->(${t(index + 1)})` : `(${t(index)})<-[${r}${typed}]-(${t(index + 1)})`);
    const alternatives = relations.map((relation) => relationCondition(r, relation, relations.length > 1, parameter));
    const condition = alternatives.length === 1 ? alternatives[0]! : `(${alternatives.join(' OR ')})`;
    if (condition !== '') conditions.push(condition);
    if (step.token !== undefined) conditions.push(...tokenConditions(t(index + 1), step.token, parameter));
  });

  const last = t(tokens - 1);
  conditions.push(`t0.ne IN ${parameter(rule.subject.entity)}`, `${last}.ne IN ${parameter(rule.object.entity)}`, `t0.entityId <> ${last}.entityId`);
  if (rule.subject.token !== undefined) conditions.push(...tokenConditions('t0', rule.subject.token, parameter));
  if (rule.object.token !== undefined) conditions.push(...tokenConditions(last, rule.object.token, parameter));
  // a path visits each token once
  for (let i = 0; i < tokens; i++) for (let j = i + 1; j < tokens; j++) conditions.push(`${t(i)}.id <> ${t(j)}.id`);

  const columns = [
    'doc',
    'sentence',
    ...Array.from({ length: tokens }, (_, i) => `n${i}`),
    ...rule.path.flatMap((_, i) => [`type${i + 1}`, `specific${i + 1}`]),
  ];
  const returns = [
    'd.id AS doc',
    's.sentenceNumber AS sentence',
    ...Array.from({ length: tokens }, (_, i) => `${t(i)} AS n${i}`),
    ...rule.path.flatMap((_, i) => [`type(r${i + 1}) AS type${i + 1}`, `r${i + 1}.specific AS specific${i + 1}`]),
  ];
  const cypher = `UNWIND $ids AS wanted MATCH ${patterns.join(', ')} WHERE ${conditions.join(' AND ')} RETURN ${returns.join(', ')}`;
  return { rule, cypher, parameters, columns };
}

/** `obl` matches OBL with any subtype; `obl:tmod` matches OBL with specific `tmod`. */
function relationCondition(r: string, relation: string, typeInCondition: boolean, parameter: (value: unknown) => string): string {
  const [base, specific] = relation.split(':') as [string, string | undefined];
  const parts: string[] = [];
  if (typeInCondition) parts.push(`type(${r}) = ${parameter(base.toUpperCase())}`);
  if (specific !== undefined) parts.push(`${r}.specific = ${parameter(specific)}`);
  return parts.length > 1 ? `(${parts.join(' AND ')})` : (parts[0] ?? '');
}

function baseOf(relation: string): string {
  return relation.split(':')[0]!.toUpperCase();
}

function tokenConditions(token: string, constraint: TokenConstraint, parameter: (value: unknown) => string): string[] {
  const conditions: string[] = [];
  if (constraint.lemma !== undefined) conditions.push(`toLower(${token}.lemma) IN ${parameter(constraint.lemma.map((lemma) => lemma.toLowerCase()))}`);
  if (constraint.pos !== undefined) conditions.push(`${token}.pos IN ${parameter(constraint.pos)}`);
  if (constraint.upos !== undefined) conditions.push(`${token}.upos IN ${parameter(constraint.upos)}`);
  if (constraint.entity !== undefined) conditions.push(`${token}.ne IN ${parameter(constraint.entity)}`);
  if (constraint.negated !== undefined) {
    const negation =
      `exists { MATCH (${token})-[x]->(n:TagOccurrence) WHERE type(x) IN ${parameter([...NEGATION_RELATIONS])} ` +
      `AND toLower(n.lemma) IN ${parameter([...NEGATION_LEMMAS])} }`;
    conditions.push(constraint.negated ? negation : `NOT ${negation}`);
  }
  for (const dependent of constraint.dependents ?? []) {
    const relations = Array.isArray(dependent.relation) ? dependent.relation : [dependent.relation];
    const alternatives = relations.map((relation) => {
      const [base, specific] = relation.split(':') as [string, string | undefined];
      const typeCondition = `type(x) = ${parameter(base.toUpperCase())}`;
      return specific === undefined ? typeCondition : `(${typeCondition} AND x.specific = ${parameter(specific)})`;
    });
    const lemma = dependent.lemma === undefined ? '' : ` AND toLower(n.lemma) IN ${parameter(dependent.lemma.map((item) => item.toLowerCase()))}`;
    conditions.push(`exists { MATCH (${token})-[x]->(n:TagOccurrence) WHERE (${alternatives.join(' OR ')})${lemma} }`);
  }
  return conditions;
}

/** The relations in a rule's result rows, one per rule, sentence and pair of entities (the first path found is the evidence). */
export function relationsOf(query: RuleQuery, records: readonly GraphRecord[]): FoundRelation[] {
  const found = new Map<string, FoundRelation>();
  const steps = query.rule.path;
  for (const record of records) {
    const nodes = Array.from({ length: steps.length + 1 }, (_, i) => record[`n${i}`] as GraphNode);
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
        const type = text(record[`type${i}`]).toLowerCase();
        const specific = record[`specific${i}`];
        const relationName = typeof specific === 'string' && specific !== '' ? `${type}:${specific}` : type;
        return { ...token, step: { relation: relationName, direction: steps[i - 1]!.direction } };
      }),
    };
    const key = JSON.stringify([
      relation.document,
      relation.sentence,
      relation.subject.start,
      relation.subject.end,
      relation.object.start,
      relation.object.end,
    ]);
    const known = found.get(key);
    if (known === undefined || known.evidence[0]!.index > relation.evidence[0]!.index) found.set(key, relation);
  }
  return [...found.values()];
}

type Properties = GraphNode['properties'];

function entityOf(properties: Properties): EntitySpan {
  return {
    text: text(properties['entityValue'] ?? properties['value']),
    type: text(properties['ne']),
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
