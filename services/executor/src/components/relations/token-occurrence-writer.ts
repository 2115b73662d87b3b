import { appendJsonPath, ValidationError } from '@loom/domain';
import { type GraphStore, isTransientGraphError } from '@loom/graph';
import { type ComponentContext, type ComponentFactory, type LoomMessage, type Outcome, outcome, type Processor } from '../../runtime/component.js';
import { type GraphStores } from '../graph-stores.js';
import { type TokenGraphDocument, tokenGraphDocument } from './token-graph-document.js';
import { TOKEN_GRAPH_INDEXES, writeTokenGraph } from './token-graph.js';

/** The body field that receives the AnnotatedText id. */
export const NODE_ID_FIELD = 'node_id';

/**
 * The Token Occurrence Writer: stores the annotation of each message (`annotation_field`, default `_annotation`) as
 * the token graph of GraphAware neo4j-nlp in its graph resource (token-graph.ts) and passes the message on with
 * `node_id`, the id of its AnnotatedText node. A batch of messages is one transaction of a few statements; writing a
 * document again changes nothing. In a dry run it writes into a scratch graph of the run instead (see GraphStores).
 */
export function tokenOccurrenceWriterFactory(stores: GraphStores): ComponentFactory {
  return {
    kind: 'processor',
    async create(context) {
      const field = context.options.string('annotation_field').trim();
      if (field === '')
        throw ValidationError.of(`${context.name}.options.annotation_field`, 'must name the body field holding the annotation', 'MISSING_FIELD');
      const store = await openTokenGraph(stores, context);
      try {
        await store.ensurePropertyIndexes(TOKEN_GRAPH_INDEXES);
      } catch (error) {
        await store.close();
        throw error;
      }
      return new TokenOccurrenceWriter(store, field);
    },
  };
}

/** The token graph a relation component works on: its resource, or the run's scratch graph in a dry run. */
export async function openTokenGraph(stores: GraphStores, context: ComponentContext): Promise<GraphStore> {
  if (context.dryRun) return stores.openScratch(context.privateDirectory());
  if (context.resource === undefined) {
    throw ValidationError.of(`${context.name}.resource`, 'is required: a graph database resource (Neo4j or AGE) for the NLP helper graph', 'MISSING_FIELD');
  }
  return stores.open(context.resource);
}

class TokenOccurrenceWriter implements Processor {
  constructor(
    private readonly store: GraphStore,
    private readonly field: string,
  ) {}

  async process(batch: readonly LoomMessage[], signal: AbortSignal): Promise<readonly Outcome[]> {
    const path = appendJsonPath('body', this.field);
    const documents = batch.map((message): TokenGraphDocument | Outcome => {
      try {
        return tokenGraphDocument(message.body[this.field], path);
      } catch (error) {
        return outcome.fail(error instanceof Error ? error.message : String(error));
      }
    });
    const valid = documents.filter((document): document is TokenGraphDocument => !isOutcome(document));
    let failedWrite: Outcome | undefined;
    if (valid.length > 0) {
      try {
        await writeTokenGraph(this.store, valid, signal);
      } catch (error) {
        // a refusal of the whole batch: write the messages one by one, so only the one at fault fails
        if (valid.length > 1 && !isTransientGraphError(error) && !signal.aborted) return this.oneByOne(batch, documents, signal);
        failedWrite = outcome.fail(error instanceof Error ? error.message : String(error), isTransientGraphError(error));
      }
    }
    return batch.map((message, i) => {
      const document = documents[i]!;
      if (isOutcome(document)) return document;
      return failedWrite ?? outcome.emit(withNodeId(message, document.id));
    });
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private async oneByOne(batch: readonly LoomMessage[], documents: readonly (TokenGraphDocument | Outcome)[], signal: AbortSignal): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    for (const [i, message] of batch.entries()) {
      const document = documents[i]!;
      if (isOutcome(document)) {
        outcomes.push(document);
        continue;
      }
      try {
        await writeTokenGraph(this.store, [document], signal);
        outcomes.push(outcome.emit(withNodeId(message, document.id)));
      } catch (error) {
        outcomes.push(outcome.fail(error instanceof Error ? error.message : String(error), isTransientGraphError(error)));
      }
    }
    return outcomes;
  }
}

function withNodeId(message: LoomMessage, id: string): LoomMessage {
  return { ...message, body: { ...message.body, [NODE_ID_FIELD]: id } };
}

function isOutcome(value: TokenGraphDocument | Outcome): value is Outcome {
  return 'ok' in value;
}
