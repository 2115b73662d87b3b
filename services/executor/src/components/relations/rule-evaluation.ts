import { type GraphRecord, type GraphStore, isTransientGraphError } from '@loom/graph';
import { type Logger } from '@loom/telemetry';
import { INPUT_PARAMETER, type RuleQuery } from './rule-cypher.js';
import { type FoundRelation, type RelationCandidate, relationsOf, withProperNounSpans } from './rule-relations.js';

/** A rule whose statement failed on a batch: its name and the error (the batch's other rules still produce). */
export interface RuleFailure {
  readonly rule: string;
  readonly error: string;
}

/** What a rule set found in some documents, and the rules that failed on them. */
export interface RuleEvaluation {
  readonly relations: readonly FoundRelation[];
  readonly failures: readonly RuleFailure[];
}

/**
 * Runs every rule over the documents (AnnotatedText ids), one statement per fixed path of the rule for all of them,
 * then widens proper-noun ends to their spans. A rule one of whose statements fails for a reason of its own fails
 * alone, as a whole (none of its paths' relations): it is logged and listed in `failures`, and the other rules'
 * relations stand. A transient graph error (the store unreachable) is thrown, so that the caller retries the batch
 * whole.
 */
export async function evaluateRules(
  store: GraphStore,
  queries: readonly RuleQuery[],
  documents: readonly string[],
  options: { readonly signal?: AbortSignal; readonly logger?: Logger } = {},
): Promise<RuleEvaluation> {
  const candidates: RelationCandidate[] = [];
  const failures: RuleFailure[] = [];
  const signal = options.signal === undefined ? {} : { signal: options.signal };
  if (documents.length === 0) return { relations: [], failures };
  for (const query of queries) {
    try {
      const records: GraphRecord[] = [];
      for (const [branch, statement] of query.statements.entries()) {
        const input = { ...statement.values, ids: documents };
        const rows = await store.run(statement.cypher, { [INPUT_PARAMETER]: input }, { columns: query.columns, ...signal });
        // the rows of every path of the rule together, in path order, so that a relation two paths find is one
        for (const row of rows) records.push({ ...row, branch });
      }
      candidates.push(...relationsOf(query, records));
    } catch (error) {
      if (isTransientGraphError(error) || options.signal?.aborted === true) throw error;
      options.logger?.warn({ rule: query.rule.name, documents: documents.length, err: error }, 'relation rule failed on a batch; the other rules still ran');
      failures.push({ rule: query.rule.name, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return { relations: await withProperNounSpans(store, candidates, options.signal), failures };
}
