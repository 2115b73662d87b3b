import { findResourceDefinition, RESOURCE_KINDS, type ResourceInstance } from '@loom/domain';
import { type GraphStore } from '@loom/graph';
import { describe, expect, it } from 'vitest';
import { MAX_SHARED_GRAPH_STORES, SharedGraphStores } from './shared-graph-stores.js';

/** A resource of a Neo4j database by its password, so each password is a store of its own. */
function resource(password: string): ResourceInstance {
  return {
    name: 'Graph_0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
    resource: findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE)!,
    parameters: { host: 'graph.example.com', user: 'neo4j', password },
  };
}

/** Stores that record their opening and closing; only `close` and `read` are ever called. */
function recordingStores(): { open: (resource: ResourceInstance) => Promise<GraphStore>; events: string[] } {
  const events: string[] = [];
  const open = (instance: ResourceInstance): Promise<GraphStore> => {
    const name = String(instance.parameters['password']);
    events.push(`open ${name}`);
    return Promise.resolve({
      close: () => {
        events.push(`close ${name}`);
        return Promise.resolve();
      },
    } as GraphStore);
  };
  return { open, events };
}

describe('SharedGraphStores', () => {
  it('opens a store once per resource and reuses it, a changed resource getting its own', async () => {
    const { open, events } = recordingStores();
    const shared = new SharedGraphStores(open);
    const first = await shared.use(resource('a'), (store) => Promise.resolve(store));
    expect(await shared.use(resource('a'), (store) => Promise.resolve(store))).toBe(first);
    await shared.use(resource('b'), () => Promise.resolve());
    expect(events).toEqual(['open a', 'open b']);
    await shared.close();
    expect(events).toEqual(['open a', 'open b', 'close a', 'close b']);
    await expect(shared.use(resource('a'), () => Promise.resolve())).rejects.toThrow('its graph stores are closed');
  });

  it('closes the least recently used idle store past the bound, never one a call is using', async () => {
    const { open, events } = recordingStores();
    const shared = new SharedGraphStores(open);
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    // store 0 stays in use while the others come and go
    const using = shared.use(resource('0'), () => held);
    for (let index = 1; index <= MAX_SHARED_GRAPH_STORES + 1; index++) await shared.use(resource(String(index)), () => Promise.resolve());
    // 0 is the oldest but in use: 1 and 2 go instead
    expect(events.filter((event) => event.startsWith('close'))).toEqual(['close 1', 'close 2']);
    release();
    await using;
    await shared.close();
  });

  it('keeps no store that failed to open: the next call tries again', async () => {
    const { events } = recordingStores();
    let attempts = 0;
    const shared = new SharedGraphStores((instance) => {
      attempts++;
      return attempts === 1 ? Promise.reject(new Error('cannot connect')) : recordingStores().open(instance);
    });
    await expect(shared.use(resource('a'), () => Promise.resolve())).rejects.toThrow('cannot connect');
    await shared.use(resource('a'), () => Promise.resolve());
    expect(attempts).toBe(2);
    expect(events).toEqual([]);
    await shared.close();
  });
});
