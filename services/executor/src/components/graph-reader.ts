import { randomUUID } from 'node:crypto';
import { ValidationError } from '@loom/domain';
import { type GraphStore } from '@loom/graph';
import { type ComponentContext, type ComponentFactory, type Emit, type Source } from '../runtime/component.js';
import { type GraphStores } from './graph-stores.js';

/**
 * The graph reader source: runs its Cypher `query` every `period` ms and emits each record as a
 * message. The next poll starts `period` ms after the previous one's records were all accepted, so
 * a slow workflow is never polled faster than it drains; a failed poll is logged and counted, and
 * the next one comes at its time.
 */
export function graphReaderFactory(stores: GraphStores): ComponentFactory {
  return {
    kind: 'source',
    async create(context) {
      const period = context.options.integer('period');
      if (period < 1) throw ValidationError.of(`${context.name}.options.period`, 'must be at least 1 ms', 'OUT_OF_RANGE');
      const query = context.options.string('query').trim();
      if (query === '') throw ValidationError.of(`${context.name}.options.query`, 'is required: a Cypher query', 'MISSING_FIELD');
      if (context.resource === undefined) {
        throw ValidationError.of(`${context.name}.resource`, 'is required: a graph database resource (Neo4j or AGE)', 'MISSING_FIELD');
      }
      return new GraphReader(context, query, period, await stores.open(context.resource));
    },
  };
}

class GraphReader implements Source {
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private readonly stopping = new AbortController();
  private polls = 0;

  constructor(
    private readonly context: ComponentContext,
    private readonly query: string,
    private readonly period: number,
    private readonly store: GraphStore,
  ) {}

  start(emit: Emit): Promise<void> {
    this.schedule(emit, 0);
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort();
    clearTimeout(this.timer);
    await this.polling;
    await this.store.close();
  }

  private schedule(emit: Emit, delay: number): void {
    if (this.stopping.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll(emit).finally(() => this.schedule(emit, this.period));
    }, delay);
  }

  private async poll(emit: Emit): Promise<void> {
    this.polls += 1;
    const signal = AbortSignal.any([this.stopping.signal, this.context.signal]);
    try {
      for await (const record of this.store.stream(this.query, {}, { signal })) {
        await emit({ id: randomUUID(), body: { ...record }, headers: {} }, { signal });
      }
    } catch (error) {
      if (signal.aborted) return;
      this.context.logger.warn(
        { component: this.context.name, poll: this.polls, error: error instanceof Error ? error.message : String(error) },
        'graph reader poll failed',
      );
    }
  }
}
