import { type ComponentInstance, componentInstance, type WorkflowConfiguration } from '@loom/domain';
import { type ComponentFactory, type LoomMessage, outcome } from '../src/runtime/component.js';

/** A component instance of a catalog kind with the given option values. */
export const instance = componentInstance;

/** A workflow of these components joined by `[from, to]` links. */
export function workflowOf(name: string, components: ComponentInstance[], links: [string, string][]): WorkflowConfiguration {
  return { name, autoStart: false, components, links: links.map(([from, to]) => ({ from, to })), resources: [], skills: [], workflowResources: [] };
}

/** A sink (to register under some kind) that records every message reaching it and emits nothing. */
export function captureSink(): { factory: ComponentFactory; received: LoomMessage[] } {
  const received: LoomMessage[] = [];
  const factory: ComponentFactory = {
    kind: 'processor',
    create: () =>
      Promise.resolve({
        process: (batch: readonly LoomMessage[]) => {
          received.push(...batch);
          return Promise.resolve(batch.map(() => outcome.none()));
        },
        close: () => Promise.resolve(),
      }),
  };
  return { factory, received };
}
