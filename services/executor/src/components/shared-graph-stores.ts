import { type ResourceInstance } from '@loom/domain';
import { FailedPreconditionError } from '@loom/foundation';
import { type GraphStore } from '@loom/graph';

/** Most stores SharedGraphStores keeps open; past it the least recently used one that no call is using is closed. */
export const MAX_SHARED_GRAPH_STORES = 8;

interface Entry {
  readonly store: Promise<GraphStore>;
  users: number;
}

/**
 * Graph stores kept open between calls (ReadGraph), one per resource: its kind and parameters, an opened password
 * included, so a changed resource gets a store of its own. A Neo4j driver with its connections, or an AGE pool, is
 * reused instead of made for every statement. At most MAX_SHARED_GRAPH_STORES stay open, the least recently used idle
 * one closed first; a store some call is using is never closed under it.
 */
export class SharedGraphStores {
  /** In the order of their last use, the oldest first. */
  private readonly entries = new Map<string, Entry>();
  private closed = false;

  constructor(private readonly open: (resource: ResourceInstance) => Promise<GraphStore>) {}

  /** Runs `work` on the resource's store, opened now or kept from an earlier call. */
  async use<T>(resource: ResourceInstance, work: (store: GraphStore) => Promise<T>): Promise<T> {
    if (this.closed) throw new FailedPreconditionError('the executor is stopping: its graph stores are closed');
    const key = JSON.stringify([resource.resource.qualifiedName, resource.parameters]);
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { store: this.open(resource), users: 0 };
      const made = entry;
      // a store that could not be opened is not kept: the next call tries again
      made.store.catch(() => {
        if (this.entries.get(key) === made) this.entries.delete(key);
      });
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    entry.users++;
    try {
      return await work(await entry.store);
    } finally {
      entry.users--;
      await this.trim();
    }
  }

  /** Closes every store; later calls are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(entries.map(async (entry) => (await entry.store).close()));
  }

  /** Closes the least recently used idle stores while more than MAX_SHARED_GRAPH_STORES are open. */
  private async trim(): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= MAX_SHARED_GRAPH_STORES) break;
      if (entry.users > 0) continue;
      this.entries.delete(key);
      closing.push(entry.store.then((store) => store.close()).catch(() => undefined));
    }
    await Promise.all(closing);
  }
}
