import {
  type DependentConstraint,
  expandRulePaths,
  type RelationRule,
  type RelationRuleSet,
  relationsByType,
  resolveWords,
  type RuleHop,
  type TokenConstraint,
} from '@loom/domain';

// Rules become Cypher over the token graph (token-graph.ts), one statement per fixed path of a rule, the same text on
// Neo4j and AGE. A statement's text depends only on the path's shape (hop directions and relationship types, which
// constraints exist); every value (lemma and word lists, entity types, the batch's ids) is an entry of ONE map
// parameter, `$input`, named by its place in the text. So paths of one shape share one cached plan across rules.
// The map matters: Neo4j 5 keys its plan cache on the sizes of list parameters too (a list of 1, of 2 to 9, of 10 or
// more were planned apart), so lists as parameters of their own would be planned again for every other size of
// word list, and of batch (`ids`); lists inside a map are not (docs/relations.md).
// The statement is anchored so that its cost is bounded by the batch, never by the graph nor by a power of a
// sentence's length: it starts from the entity tokens of the batch's sentences (AnnotatedText by its indexed id, its
// sentences, their tokens that can be the subject), then takes each hop from a token already bound along ONE
// relationship type (an `up` hop has one head, a `down` hop the few dependents of that kind), and only then checks
// the object end and that every token hangs off the same (:Sentence): the one-sentence limit is part of the pattern,
// not a property of the data. No pattern is a free variable-length expansion, and no relationship is untyped (on AGE
// an untyped one reads every edge table).

/** Lemmas that negate the token they depend on (UD English: `not`/`n't`/`never` as advmod, `no` as det). */
export const NEGATION_LEMMAS = ['not', "n't", 'never', 'no', 'neither', 'nor'] as const;
/**
 * Relationship types by which a negation attaches in UD v2 (the parser's labels): advmod and det. Each costs the
 * statement a subquery, which Neo4j plans at a cost of its own, so `neg` of UD v1 is no longer looked for.
 */
const NEGATION_TYPES = ['ADVMOD', 'DET'] as const;
/** Relations that join the words of a proper-noun span to its head. */
export const SPAN_TYPES = ['FLAT', 'COMPOUND'] as const;
/** The type reported for a proper-noun span that no named entity covers. */
export const PROPER_NOUN_TYPE = 'PROPN';

/** The name of the one map parameter of a path statement: its values, and the batch's AnnotatedText ids as `ids`. */
export const INPUT_PARAMETER = 'input';

/** The statement of one fixed path of a rule and its values (the entries of `$input` besides `ids`). */
export interface PathStatement {
  readonly cypher: string;
  readonly values: Record<string, unknown>;
}

/** A rule's statements, one per fixed path (`branches`, in the same order), and the shape of their rows. */
export interface RuleQuery {
  readonly rule: RelationRule;
  /** One statement per branch, `statements[i]` for `branches[i]`. */
  readonly statements: readonly PathStatement[];
  readonly columns: readonly string[];
  /** The hops of each fixed path. */
  readonly branches: readonly (readonly RuleHop<TokenConstraint>[])[];
}

/** The columns of every path statement: document, sentence number, the path's tokens and the hops' subtypes. */
export const RULE_COLUMNS = ['doc', 'sentence', 'nodes', 'specifics'] as const;

type Lists = RelationRuleSet['lists'];

/** One way a dependent check holds: a typed relationship from the bound token to a dependent, and the dependent's conditions. */
interface DependentAlternative {
  readonly pattern: string;
  readonly where: readonly string[];
  /** The dependent's variable, counted. */
  readonly counted: string;
}

/** The token must (`present`) or must not have a dependent matching one of the alternatives. */
interface DependentCheck {
  readonly alternatives: readonly DependentAlternative[];
  readonly present: boolean;
}

/** Conditions on a token: on its own properties, and on its dependents. */
interface Constraints {
  readonly where: readonly string[];
  readonly checks: readonly DependentCheck[];
}

/** Builds the statements of one rule (`lists`: the rule set's named word lists); `$input.ids` holds the AnnotatedText ids to search. */
export function ruleQuery(rule: RelationRule, lists?: Lists): RuleQuery {
  const branches = expandRulePaths<TokenConstraint>(rule.path);
  const statements = branches.map((hops) => {
    // a compiler per path, so that its variables and parameters are numbered from zero: the text is the shape's
    const compiler = new Compiler(lists);
    return { cypher: compiler.path(rule, hops), values: compiler.values };
  });
  return { rule, statements, columns: RULE_COLUMNS, branches };
}

class Compiler {
  readonly values: Record<string, unknown> = {};
  private variables = 0;

  constructor(private readonly lists: Lists) {}

  /**
   * An entry of `$input` holding `value`, named by its place in the statement (one per use, even of an equal value:
   * sharing one by value would make the text depend on the values).
   */
  parameter(value: unknown): string {
    const name = `p${Object.keys(this.values).length}`;
    this.values[name] = value;
    return `$${INPUT_PARAMETER}.${name}`;
  }

  private fresh(prefix: string): string {
    return `${prefix}${this.variables++}`;
  }

  /**
   * One fixed path: anchored on the subject's candidate tokens, hop by hop from a bound token, the object end checked on
   * the last hop. A WITH between the hops makes each hop a query part of its own, planned with its start bound: Neo4j
   * cannot reorder the parts (planning the whole pattern as one took it tens of seconds for a rule of a few hops), and
   * each part joins one relationship to a bound token and checks that the token hangs off the same sentence. A check
   * on a token's dependents follows its hop as query parts of their own too (`dependentChecks`).
   */
  path(rule: RelationRule, hops: readonly RuleHop<TokenConstraint>[]): string {
    const t = (i: number): string => `t${i}`;
    const r = (i: number): string => `r${i}`;
    const anchor = this.endConditions('t0', rule.subject);
    const clauses = [
      `UNWIND $${INPUT_PARAMETER}.ids AS wanted`,
      `MATCH (d:AnnotatedText)-[:CONTAINS_SENTENCE]->(s:Sentence)-[:SENTENCE_TAG_OCCURRENCE]->(t0:TagOccurrence) WHERE ${['d.id = wanted', ...anchor.where].join(' AND ')}`,
    ];
    const bound = ['d', 's', 't0'];
    clauses.push(...this.dependentChecks(bound, anchor.checks));
    hops.forEach((hop, index) => {
      const from = t(index);
      const to = t(index + 1);
      const relationship = r(index + 1);
      // types cannot be parameters; a hop's type is a validated UD relation (lower-case letters), upper-cased
      const arrow = hop.direction === 'down' ? `-[${relationship}:${hop.type}]->` : `<-[${relationship}:${hop.type}]-`;
      const conditions = [this.specificCondition(relationship, hop.relations)];
      // a path visits each token once
      for (let earlier = 0; earlier <= index; earlier++) conditions.push(`${to}.id <> ${t(earlier)}.id`);
      const checks: DependentCheck[] = [];
      const add = (constraints: Constraints): void => {
        conditions.push(...constraints.where);
        checks.push(...constraints.checks);
      };
      if (hop.token !== undefined) add(this.tokenConditions(to, hop.token));
      if (index === hops.length - 1) {
        add(this.endConditions(to, rule.object));
        conditions.push(`(t0.entityId IS NULL OR ${to}.entityId IS NULL OR t0.entityId <> ${to}.entityId)`);
      }
      const where = conditions.filter((condition) => condition !== '');
      clauses.push(
        `WITH ${bound.join(', ')}`,
        `MATCH (${from})${arrow}(${to}:TagOccurrence), (s)-[:SENTENCE_TAG_OCCURRENCE]->(${to})${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}`,
      );
      bound.push(relationship, to);
      clauses.push(...this.dependentChecks(bound, checks));
    });
    const nodes = Array.from({ length: hops.length + 1 }, (_, i) => t(i)).join(', ');
    const specifics = hops.map((_, i) => `${r(i + 1)}.specific`).join(', ');
    clauses.push(`RETURN d.id AS doc, s.sentenceNumber AS sentence, [${nodes}] AS nodes, [${specifics}] AS specifics`);
    return clauses.join(' ');
  }

  /**
   * The clauses that keep the rows whose token has (or has not) the dependents of each check: per alternative an
   * OPTIONAL MATCH of one typed relationship from the bound token, counted by a WITH that keeps every bound variable,
   * then a WITH that filters on the sum. Neo4j plans these small query parts in a fraction of the time it takes for an
   * `exists {}` subquery in the hop's WHERE (docs/relations.md), and AGE reads them the same way.
   */
  private dependentChecks(bound: readonly string[], checks: readonly DependentCheck[]): string[] {
    const clauses: string[] = [];
    for (const check of checks) {
      const counts: string[] = [];
      for (const alternative of check.alternatives) {
        const count = this.fresh('c');
        clauses.push(`OPTIONAL MATCH ${alternative.pattern}${alternative.where.length > 0 ? ` WHERE ${alternative.where.join(' AND ')}` : ''}`);
        clauses.push(`WITH ${[...bound, ...counts].join(', ')}, count(${alternative.counted}) AS ${count}`);
        counts.push(count);
      }
      clauses.push(`WITH ${bound.join(', ')}, ${counts.join(' + ')} AS found WHERE found ${check.present ? '> 0' : '= 0'}`);
    }
    return clauses;
  }

  /**
   * An end: a named entity of the given types (`PROPN` among them: or a proper noun outside every entity), else any
   * named entity or a proper noun; then its token constraints.
   */
  private endConditions(token: string, end: RelationRule['subject']): Constraints {
    const conditions: string[] = [];
    if (end.entity !== undefined) {
      conditions.push(this.entityCondition(token, end.entity));
    } else {
      // a proper noun outside every entity; rule-relations.ts widens it to its span
      conditions.push(`(${token}.ne IS NOT NULL OR ${token}.upos = 'PROPN')`);
    }
    if (end.token === undefined) return { where: conditions, checks: [] };
    const constraints = this.tokenConditions(token, end.token);
    return { where: [...conditions, ...constraints.where], checks: constraints.checks };
  }

  /** The token is of a named entity of one of the types, or (`PROPN` among them) a proper noun outside every entity. */
  private entityCondition(token: string, entity: readonly string[]): string {
    const types = entity.filter((type) => type !== PROPER_NOUN_TYPE);
    // a proper noun NER missed; rule-relations.ts widens an end of it to its span
    const properNoun = `(${token}.ne IS NULL AND ${token}.upos = 'PROPN')`;
    if (types.length === entity.length) return `${token}.ne IN ${this.parameter(entity)}`;
    if (types.length === 0) return properNoun;
    return `(${token}.ne IN ${this.parameter(types)} OR ${properNoun})`;
  }

  /** `obl` matches any OBL; `obl:tmod` only OBL with specific `tmod`; a list of one type matches if any does. */
  private specificCondition(r: string, relations: readonly string[]): string {
    const specifics = relations.map((relation) => relation.split(':')[1]);
    if (specifics.some((specific) => specific === undefined)) return '';
    return `${r}.specific IN ${this.parameter(specifics)}`;
  }

  /** A token's constraints: on its own properties (`where`) and on its dependents (`checks`, run after its hop). */
  tokenConditions(token: string, constraint: TokenConstraint): Constraints {
    const conditions: string[] = [];
    const checks: DependentCheck[] = [];
    if (constraint.lemma !== undefined) conditions.push(`toLower(${token}.lemma) IN ${this.parameter(resolveWords(constraint.lemma, this.lists))}`);
    if (constraint.notLemma !== undefined) conditions.push(`NOT (toLower(${token}.lemma) IN ${this.parameter(resolveWords(constraint.notLemma, this.lists))})`);
    if (constraint.pos !== undefined) conditions.push(`${token}.pos IN ${this.parameter(constraint.pos)}`);
    if (constraint.upos !== undefined) conditions.push(`${token}.upos IN ${this.parameter(constraint.upos)}`);
    if (constraint.entity !== undefined) conditions.push(this.entityCondition(token, constraint.entity));
    if (constraint.negated !== undefined) {
      const alternatives = NEGATION_TYPES.map((type) => {
        const n = this.fresh('n');
        return {
          pattern: `(${token})-[:${type}]->(${n}:TagOccurrence)`,
          where: [`toLower(${n}.lemma) IN ${this.parameter([...NEGATION_LEMMAS])}`],
          counted: n,
        };
      });
      checks.push({ alternatives, present: constraint.negated });
    }
    for (const dependent of constraint.dependents ?? []) checks.push({ alternatives: this.dependentAlternatives(token, dependent), present: true });
    for (const dependent of constraint.noDependents ?? []) checks.push({ alternatives: this.dependentAlternatives(token, dependent), present: false });
    return { where: conditions, checks };
  }

  /** A dependent like this, one alternative per relationship type it may have (any of which is enough). */
  private dependentAlternatives(token: string, dependent: DependentConstraint): DependentAlternative[] {
    return [...relationsByType(dependent.relation)].map(([type, relations]) => {
      const x = this.fresh('x');
      const n = this.fresh('n');
      const conditions = [this.specificCondition(x, relations), ...this.dependentTokenConditions(n, dependent)];
      // a dependent of the dependent (one level, rare): a subquery inside the alternative
      for (const inner of dependent.dependents ?? []) conditions.push(this.dependentCondition(n, inner));
      return { pattern: `(${token})-[${x}:${type}]->(${n}:TagOccurrence)`, where: conditions.filter((condition) => condition !== ''), counted: n };
    });
  }

  /** The token has a dependent like this (one `exists` per relationship type it may have, any of which holds). */
  private dependentCondition(token: string, dependent: DependentConstraint): string {
    const alternatives = [...relationsByType(dependent.relation)].map(([type, relations]) => {
      const x = this.fresh('x');
      const n = this.fresh('n');
      const conditions = [this.specificCondition(x, relations), ...this.dependentTokenConditions(n, dependent)];
      for (const inner of dependent.dependents ?? []) conditions.push(this.dependentCondition(n, inner));
      const where = conditions.filter((condition) => condition !== '');
      return `exists { MATCH (${token})-[${x}:${type}]->(${n}:TagOccurrence)${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} }`;
    });
    return alternatives.length === 1 ? alternatives[0]! : `(${alternatives.join(' OR ')})`;
  }

  private dependentTokenConditions(token: string, dependent: Omit<DependentConstraint, 'dependents'>): string[] {
    const conditions: string[] = [];
    if (dependent.lemma !== undefined) conditions.push(`toLower(${token}.lemma) IN ${this.parameter(resolveWords(dependent.lemma, this.lists))}`);
    if (dependent.notLemma !== undefined) conditions.push(`NOT (toLower(${token}.lemma) IN ${this.parameter(resolveWords(dependent.notLemma, this.lists))})`);
    if (dependent.upos !== undefined) conditions.push(`${token}.upos IN ${this.parameter(dependent.upos)}`);
    return conditions;
  }
}
