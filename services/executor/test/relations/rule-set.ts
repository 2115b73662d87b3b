import { readFileSync } from 'node:fs';
import { parseRelationRules, type RelationRuleSet } from '@loom/domain';
import { type GraphStore } from '@loom/graph';
import { ruleQuery, type RuleQuery } from '../../src/components/relations/rule-cypher.js';
import { evaluateRules, type RuleEvaluation } from '../../src/components/relations/rule-evaluation.js';
import { type TokenGraphDocument } from '../../src/components/relations/token-graph-document.js';
import { TOKEN_GRAPH_INDEXES, writeTokenGraph } from '../../src/components/relations/token-graph.js';

/** The rule set the relations example ships (examples/relations/rules.json), as a file and parsed. */
export const SHIPPED_RULES_FILE = new URL('../../../../examples/relations/rules.json', import.meta.url);

/** The shipped rule set, parsed (checked as at push). */
export function shippedRules(): RelationRuleSet {
  return parseRelationRules(JSON.parse(readFileSync(SHIPPED_RULES_FILE, 'utf8')) as unknown, 'examples/relations/rules.json');
}

/**
 * The shipped rule set as the relations example embeds it in its `rules` option: the file's content without its
 * `$schema` and each rule's `examples` (documentation, which the tests check against the file).
 */
export function shippedRulesOption(): Record<string, unknown> {
  const { $schema: _schema, ...file } = JSON.parse(readFileSync(SHIPPED_RULES_FILE, 'utf8')) as { $schema?: string; rules: Record<string, unknown>[] };
  return { ...file, rules: file.rules.map(({ examples: _examples, ...rule }) => rule) };
}

/** The statements of a rule set's rules. */
export function queriesOf(rules: RelationRuleSet): RuleQuery[] {
  return rules.rules.map((rule) => ruleQuery(rule, rules.lists));
}

/** Writes documents into a token graph (its indexes first, as the writer component does) and evaluates rules over all of them as one batch. */
export async function writeAndEvaluate(store: GraphStore, documents: readonly TokenGraphDocument[], queries: readonly RuleQuery[]): Promise<RuleEvaluation> {
  await store.ensurePropertyIndexes(TOKEN_GRAPH_INDEXES);
  await writeTokenGraph(store, documents);
  return evaluateRules(
    store,
    queries,
    documents.map((document) => document.id),
  );
}

/** A relation as `rule: subject -> object`, the way the tests compare them. */
export function pairOf(relation: { rule: string; subject: { text: string }; object: { text: string } }): string {
  return `${relation.rule}: ${relation.subject.text} -> ${relation.object.text}`;
}
