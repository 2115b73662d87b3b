import { parseRelationRules, type ResourceInstance, ValidationError } from '@loom/domain';
import { type GraphStore, isTransientGraphError } from '@loom/graph';
import { type ComponentContext, type ComponentFactory, type LoomMessage, type Outcome, outcome, type Processor } from '../../runtime/component.js';
import { type GraphStores } from '../graph-stores.js';
import { type Logger } from '@loom/telemetry';
import { ruleQuery, type RuleQuery } from './rule-cypher.js';
import { evaluateRules, type RuleFailure } from './rule-evaluation.js';
import { type FoundRelation } from './rule-relations.js';
import { ENTITY_INDEXES, writeRelations } from './relation-target.js';
import { NODE_ID_FIELD, openTokenGraph } from './token-occurrence-writer.js';

/** The body field that receives the relations found. */
export const RELATIONS_FIELD = '_relations';
/** The body field that names the rules that failed on the message's batch, with their errors (absent when none failed). */
export const RULE_ERRORS_FIELD = '_relation_rule_errors';

/**
 * Rule Based Relation Extraction: runs its rules (the `rules` option, schema/relation-rules.schema.json) as Cypher
 * over the token graph of each message's `node_id`, in its graph resource, and adds `_relations` to the message.
 * With `target_resource` (the name of a resource of the workflow) it also writes each relation into that graph as
 * `(:Entity)-[:<RELATION> {rule, sentence, document}]->(:Entity)`, idempotently. A dry run reads the run's scratch
 * graph and writes no target.
 */
export function relationExtractionFactory(stores: GraphStores): ComponentFactory {
  return {
    kind: 'processor',
    async create(context) {
      const rules = parseRelationRules(context.options.json('rules'), `${context.name}.options.rules`);
      const queries = rules.rules.map((rule) => ruleQuery(rule, rules.lists));
      const targetResource = context.dryRun ? undefined : targetResourceOf(context);
      const store = await openTokenGraph(stores, context);
      let target: GraphStore | undefined;
      try {
        if (targetResource !== undefined) {
          target = await stores.open(targetResource);
          await target.ensurePropertyIndexes(ENTITY_INDEXES);
        }
      } catch (error) {
        await Promise.allSettled([store.close(), target?.close()]);
        throw error;
      }
      return new RelationExtraction(store, target, queries, context.logger);
    },
  };
}

/** The resource `target_resource` names among the workflow's resources, if the option is set. */
function targetResourceOf(context: ComponentContext): ResourceInstance | undefined {
  const name = context.options.optionalString('target_resource');
  if (name === undefined || name === '') return undefined;
  const resource = context.workflowResources?.find((candidate) => candidate.name === name);
  if (resource === undefined) {
    throw ValidationError.of(
      `${context.name}.options.target_resource`,
      'must name a resource of the workflow (resources or workflowResources)',
      'INVALID_VALUE',
    );
  }
  return resource;
}

class RelationExtraction implements Processor {
  constructor(
    private readonly store: GraphStore,
    private readonly target: GraphStore | undefined,
    private readonly queries: readonly RuleQuery[],
    private readonly logger: Logger,
  ) {}

  async process(batch: readonly LoomMessage[], signal: AbortSignal): Promise<readonly Outcome[]> {
    const ids = batch.map((message) => message.body[NODE_ID_FIELD]);
    const documents = [...new Set(ids.filter((id): id is string => typeof id === 'string' && id !== ''))];
    const found = new Map<string, FoundRelation[]>(documents.map((id) => [id, []]));
    let failures: readonly RuleFailure[] = [];
    try {
      if (documents.length > 0) {
        const evaluation = await evaluateRules(this.store, this.queries, documents, { signal, logger: this.logger });
        failures = evaluation.failures;
        for (const relation of evaluation.relations) found.get(relation.document)?.push(relation);
        if (this.target !== undefined) await writeRelations(this.target, [...found.values()].flat(), signal);
      }
    } catch (error) {
      const failure = outcome.fail(error instanceof Error ? error.message : String(error), isTransientGraphError(error), error);
      return batch.map(() => failure);
    }
    return batch.map((message, i) => {
      const id = ids[i];
      if (typeof id !== 'string' || id === '') {
        return outcome.fail(`body.${NODE_ID_FIELD}: must be the id of an AnnotatedText node (the output of the Token Occurrence Writer)`);
      }
      const relations = (found.get(id) ?? []).sort(
        (a, b) => a.sentence - b.sentence || a.subject.start - b.subject.start || a.object.start - b.object.start || a.rule.localeCompare(b.rule),
      );
      const body: Record<string, unknown> = { ...message.body, [RELATIONS_FIELD]: relations.map(({ document: _document, ...relation }) => relation) };
      if (failures.length > 0) body[RULE_ERRORS_FIELD] = failures;
      return outcome.emit({ ...message, body });
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.store.close(), this.target?.close()]);
  }
}
