import { COMPONENT_KINDS } from '@loom/domain';
import { jetStreamToken, type Lease } from '@loom/messaging';
import { type ComponentContext, type ComponentFactory, type Emit, type Source } from '../runtime/component.js';

/** Sources that must produce on one executor at a time: two copies would tick, read a file or subscribe twice. */
export const SINGLETON_SOURCE_KINDS: ReadonlySet<string> = new Set([
  COMPONENT_KINDS.TIMER,
  COMPONENT_KINDS.FILE_READER,
  COMPONENT_KINDS.GRAPH_READER,
  COMPONENT_KINDS.NATS_SUBSCRIBER,
]);

/** What a leased source tells its lease. */
export interface LeaseHandlers {
  readonly onAcquired: () => void;
  readonly onLost: (reason: string) => Promise<void>;
}

/** Makes (not yet started) the lease of one key for these handlers. */
export type LeaseMaker = (key: string, handlers: LeaseHandlers) => Lease;

/** The lease key of a source of a workflow: one per source component, whichever run or executor holds it. */
export function sourceLeaseKey(workflow: string, component: string): string {
  return `${jetStreamToken(workflow)}.${jetStreamToken(component)}`;
}

/**
 * The factories with each singleton source kind wrapped: its source produces only while this executor holds the
 * source's lease (durable mode, where a source only stores into the workflow's stream and every executor consumes it).
 */
export function leasedFactories(factories: ReadonlyMap<string, ComponentFactory>, lease: LeaseMaker): ReadonlyMap<string, ComponentFactory> {
  const wrapped = new Map(factories);
  for (const [kind, factory] of factories) {
    if (factory.kind !== 'source' || !SINGLETON_SOURCE_KINDS.has(kind)) continue;
    wrapped.set(kind, {
      kind: 'source',
      // the first copy is made at once, so a bad option fails the start on every executor, holder or not
      create: async (context) => new LeasedSource(await factory.create(context), () => factory.create(context), context, lease),
    });
  }
  return wrapped;
}

/**
 * A source that produces only under its lease: a fresh copy of the source starts each time the lease is taken, and
 * stops before the lease is given up (a source, once stopped, is not started again).
 */
class LeasedSource implements Source {
  private spare: Source | undefined;
  private current: Source | undefined;
  private starting: Promise<void> = Promise.resolve();
  private lease: Lease | undefined;

  constructor(
    first: Source,
    private readonly create: () => Promise<Source>,
    private readonly context: ComponentContext,
    private readonly makeLease: LeaseMaker,
  ) {
    this.spare = first;
  }

  start(emit: Emit): Promise<void> {
    this.lease = this.makeLease(sourceLeaseKey(this.context.workflowName, this.context.name), {
      onAcquired: () => {
        this.starting = this.produce(emit);
      },
      onLost: (reason) => this.halt(reason),
    });
    this.lease.start();
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    // the lease stops the source it holds before it is given up; a copy never started is stopped for what it holds
    await this.lease?.close();
    const spare = this.spare;
    this.spare = undefined;
    await spare?.stop().catch(() => undefined);
  }

  private async produce(emit: Emit): Promise<void> {
    try {
      const source = this.spare ?? (await this.create());
      this.spare = undefined;
      this.current = source;
      await source.start(emit);
      this.context.logger.info({ component: this.context.name }, 'source lease taken: this executor produces the source’s messages');
    } catch (error) {
      this.context.fail(error);
    }
  }

  private async halt(reason: string): Promise<void> {
    await this.starting;
    const source = this.current;
    this.current = undefined;
    await source?.stop();
    this.context.logger.info({ component: this.context.name, reason }, 'source lease given up: this executor no longer produces the source’s messages');
  }
}
