import { parseStoredName, ValidationError } from '@loom/domain';
import {
  deriveReturnColumns,
  fieldsRead,
  type GraphNodeKey,
  type GraphQueryOptions,
  type GraphRecord,
  type GraphStore,
  GraphUnavailableError,
  isTransientGraphError,
  mergeKeys,
  type ProvenanceProperty,
  ProvenanceRewriteError,
  toBatchQuery,
  withProvenance,
} from '@loom/graph';
import { type Link, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { TELEMETRY_SCOPE } from '@loom/telemetry';
import { type ComponentContext, type ComponentFactory, type LoomMessage, type Outcome, outcome, type Processor } from '../runtime/component.js';
import { originOf } from '../runtime/message-trail.js';
import { spanContextOf, spanNameOf } from '../runtime/tracing.js';
import { type GraphStores } from './graph-stores.js';

/** The body field that receives a statement's records when `stream_records` is off. */
export const RECORDS_FIELD = 'records';

/** The parameter a batch is bound to, and the name each of its rows gets. */
export const BATCH_PARAMETER = 'batch';
export const BATCH_ROW = 'row';

/** Most messages one batched statement takes, whatever `batch_size` says. */
const MAX_BATCH_SIZE = 10_000;

interface WriterSettings {
  readonly query: string;
  readonly batchQuery: string | undefined;
  /** The body fields the statement reads (only those are sent); undefined: every field. */
  readonly fields: ReadonlySet<string> | undefined;
  readonly streamRecords: boolean;
  readonly batchSize: number;
  readonly gatherMs: number;
  /** Lineage properties (loom_message_id, loom_source, ...) on every node the statement writes (`provenance`). */
  readonly provenance: boolean;
}

function settingsOf(context: ComponentContext): WriterSettings {
  const field = (name: string): string => `${context.name}.options.${name}`;
  const written = context.options.string('query').trim();
  if (written === '') throw ValidationError.of(field('query'), 'is required: a Cypher statement', 'MISSING_FIELD');
  const provenance = context.options.boolean('provenance');
  const query = provenance ? queryWithProvenance(written, field('query')) : written;
  const batchWrites = context.options.boolean('batch_writes');
  const batchSize = context.options.integer('batch_size');
  if (batchWrites && (batchSize < 1 || batchSize > MAX_BATCH_SIZE)) {
    throw ValidationError.of(field('batch_size'), `must be between 1 and ${MAX_BATCH_SIZE}`, 'OUT_OF_RANGE');
  }
  const gatherMs = context.options.integer('aggregation_timeout');
  if (gatherMs < 0) throw ValidationError.of(field('aggregation_timeout'), 'must not be negative (milliseconds)', 'OUT_OF_RANGE');
  const batchQuery = batchWrites ? toBatchQuery(query, BATCH_PARAMETER, BATCH_ROW) : undefined;
  return {
    query,
    batchQuery,
    fields: batchQuery === undefined ? fieldsRead(query) : fieldsRead(batchQuery, { parameter: BATCH_PARAMETER, row: BATCH_ROW }),
    streamRecords: context.options.boolean('stream_records'),
    batchSize,
    gatherMs,
    provenance,
  };
}

/** The statement with the lineage SET after each writing clause; one it cannot mark is a ValidationError naming the query. */
function queryWithProvenance(query: string, field: string): string {
  try {
    return withProvenance(query);
  } catch (error) {
    if (error instanceof ProvenanceRewriteError) throw ValidationError.of(field, `cannot be given provenance: ${error.message}`, 'PROVENANCE_UNSUPPORTED');
    throw error;
  }
}

/**
 * The graph database writer: runs its Cypher `query` with each message's body fields as parameters
 * (`$name`), only those the query reads. With `batch_writes`, messages are gathered up to `batch_size`, or for at most
 * `aggregation_timeout` milliseconds after the first, and written by one statement,
 * `UNWIND $batch AS row` followed by the query with each `$name` read as `row.name`. A batch the
 * store refuses for a reason other than a transient one is split in halves until the bad messages
 * are found: only those fail; the rest are written.
 */
export function graphWriterFactory(stores: GraphStores): ComponentFactory {
  return {
    kind: 'processor',
    async create(context) {
      const settings = settingsOf(context);
      if (context.resource === undefined) {
        throw ValidationError.of(`${context.name}.resource`, 'is required: a graph database resource (Neo4j or AGE)', 'MISSING_FIELD');
      }
      const store = await stores.open(context.resource);
      return new GraphWriter(context, settings, store);
    },
  };
}

class GraphWriter implements Processor {
  readonly batching: Processor['batching'];
  private readonly tracer = trace.getTracer(TELEMETRY_SCOPE);
  /**
   * The statement's options: its return columns, read from its text once rather than per statement, and a trailing
   * relationship CREATE written as rows on AGE (see insertTrailingRelationship).
   */
  private readonly statementOptions: Pick<GraphQueryOptions, 'columns' | 'insertTrailingRelationship'>;
  /** A batch statement's options: those, and its rows' MERGE keys looked up by index (see lookupRowsByKey). */
  private readonly batchOptions: Pick<GraphQueryOptions, 'columns' | 'insertTrailingRelationship' | 'lookupRowsByKey'>;
  /** The node keys the statement merges on (none on a read_only resource, which refuses the statement anyway). */
  private readonly nodeKeys: readonly GraphNodeKey[];
  /** Settled once the merge keys are indexed. */
  private indexed: Promise<void> | undefined;

  constructor(
    private readonly context: ComponentContext,
    private readonly settings: WriterSettings,
    private readonly store: GraphStore,
  ) {
    this.batching = settings.batchQuery === undefined ? undefined : { size: settings.batchSize, gatherMs: settings.gatherMs };
    // when they cannot be read, the store says why at the first statement
    const derived = deriveReturnColumns(settings.batchQuery ?? settings.query);
    this.statementOptions = { ...(derived.ok ? { columns: derived.columns } : {}), insertTrailingRelationship: true };
    this.nodeKeys = store.readOnly ? [] : mergeKeys(settings.batchQuery ?? settings.query);
    if (this.nodeKeys.length === 0) this.indexed = Promise.resolve();
    // the keys are indexed before the first write: a batch's MERGEs are then one index lookup a row, where AGE's
    // planner would join the batch to each key's whole label table once it has statistics (larger graph, slower write)
    this.batchOptions = { ...this.statementOptions, ...(this.nodeKeys.length > 0 ? { lookupRowsByKey: true } : {}) };
  }

  async process(batch: readonly LoomMessage[], signal: AbortSignal): Promise<readonly Outcome[]> {
    try {
      await this.ensureIndexes();
    } catch (error) {
      return batch.map(() => failure(error)); // as the statement would have failed: retried when transient
    }
    if (this.settings.batchQuery === undefined) {
      const outcomes: Outcome[] = [];
      for (const message of batch) outcomes.push(await this.writeOne(message, signal));
      return outcomes;
    }
    const links: Link[] = batch.flatMap((message) => {
      const linked = spanContextOf(message);
      return linked === undefined ? [] : [{ context: linked }];
    });
    const span = this.tracer.startSpan(`graph batch ${spanNameOf(this.context.name)}`, {
      kind: SpanKind.CLIENT,
      links,
      attributes: { 'loom.workflow.name': this.context.workflowName, 'loom.component.name': this.context.name, 'loom.batch.size': batch.length },
    });
    try {
      const outcomes = await this.writeBatch(batch, signal);
      const failed = outcomes.filter((result) => !result.ok).length;
      if (failed > 0) span.setStatus({ code: SpanStatusCode.ERROR, message: `${failed} of ${batch.length} messages failed` });
      return outcomes;
    } finally {
      span.end();
    }
  }

  close(): Promise<void> {
    return this.store.close();
  }

  /**
   * Indexes the nodes the statement's MERGE clauses look up, before its first write (nothing connects before that):
   * without an index, on AGE above all, every MERGE reads all nodes of its label, slower the bigger the graph.
   */
  private ensureIndexes(): Promise<void> {
    this.indexed ??= this.store.ensurePropertyIndexes(this.nodeKeys).catch((error: unknown) => {
      this.indexed = undefined; // the next batch tries again
      throw error;
    });
    return this.indexed;
  }

  private async writeOne(message: LoomMessage, signal: AbortSignal): Promise<Outcome> {
    try {
      const records = await this.store.run(this.settings.query, this.parametersOf(message), { ...this.statementOptions, signal });
      return outcome.emit(...this.outputs([message], records));
    } catch (error) {
      return failure(error);
    }
  }

  /** Writes a batch in one statement; on a refusal that is not transient, splits it to find the messages at fault. */
  private async writeBatch(batch: readonly LoomMessage[], signal: AbortSignal): Promise<Outcome[]> {
    try {
      const records = await this.store.run(
        this.settings.batchQuery as string,
        { [BATCH_PARAMETER]: batch.map((message) => this.parametersOf(message)) },
        { ...this.batchOptions, signal },
      );
      const outputs = this.outputs(batch, records);
      // streamed records go out once, with the batch's first message; the others are done
      return batch.map((message, index) =>
        this.settings.streamRecords ? outcome.emit(...(index === 0 ? outputs : [])) : outcome.emit(outputs[index] ?? message),
      );
    } catch (error) {
      if (batch.length === 1 || isTransientGraphError(error) || signal.aborted) return batch.map(() => failure(error));
      const middle = Math.ceil(batch.length / 2);
      return [...(await this.writeBatch(batch.slice(0, middle), signal)), ...(await this.writeBatch(batch.slice(middle), signal))];
    }
  }

  /** The fields of a message's body the statement reads: a document's annotation is not sent to a statement that reads its id. */
  private parametersOf(message: LoomMessage): Record<string, unknown> {
    const fields = this.settings.fields;
    const provenance = this.settings.provenance ? this.provenanceOf(message) : undefined;
    if (fields === undefined) return provenance === undefined ? message.body : { ...message.body, ...provenance };
    const parameters: Record<string, unknown> = {};
    for (const field of fields) if (Object.hasOwn(message.body, field)) parameters[field] = message.body[field];
    return provenance === undefined ? parameters : Object.assign(parameters, provenance);
  }

  /** The lineage values of a message: the id and source it entered the run with, the workflow, its version, the time. */
  private provenanceOf(message: LoomMessage): Record<ProvenanceProperty, string | number> {
    const origin = originOf(message);
    return {
      loom_message_id: origin.messageId,
      loom_source: parseStoredName(origin.source)?.base ?? origin.source,
      loom_workflow: this.context.workflowName,
      loom_workflow_version: this.context.workflowVersion ?? 0,
      loom_written_at: new Date().toISOString(),
    };
  }

  /** What goes downstream: the records as messages (`stream_records`), or the messages, with their records when one message was written. */
  private outputs(batch: readonly LoomMessage[], records: readonly GraphRecord[]): LoomMessage[] {
    const first = batch[0] as LoomMessage;
    if (this.settings.streamRecords) {
      return records.map((record, index) => ({ id: `${first.id}:${index}`, headers: first.headers, body: { ...record } }));
    }
    // the records of a batched statement belong to no single message: the messages go on as they were
    if (batch.length > 1 || this.settings.batchQuery !== undefined) return [...batch];
    return [{ ...first, body: { ...first.body, [RECORDS_FIELD]: records } }];
  }
}

function failure(error: unknown): Outcome {
  const text = error instanceof Error ? error.message : String(error);
  if (isUnreachable(error)) return outcome.unreachable(text, error);
  return outcome.fail(text, isTransientGraphError(error), error);
}

/** True when the store could not be reached (refused, reset, gone), as opposed to refusing this statement. */
function isUnreachable(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth++) {
    if (current instanceof GraphUnavailableError) return true;
  }
  return false;
}
