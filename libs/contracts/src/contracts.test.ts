import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { descriptorSetPath, SecretsService, Workflow, WorkflowStoreService } from './index.js';

describe('contracts', () => {
  it('round-trips a workflow with typed option values through the wire format', () => {
    const workflow: Workflow = {
      name: 'ingest_0b7c',
      autoStart: true,
      components: [
        {
          name: 'writer_1',
          options: [
            { name: 'batch_size', value: 20 },
            { name: 'stream_records', value: false },
            { name: 'failure_handler', value: null },
          ],
          skill: undefined,
          component: undefined,
          resource: undefined,
          skillConfiguration: { inputs: {}, outputs: { entities: '_entities' } },
        },
      ],
      links: [{ from: 'inlet_1', to: 'writer_1' }],
      resources: [],
      skills: [],
      workflowResources: [],
    };
    const decoded = Workflow.decode(Workflow.encode(workflow).finish());
    expect(decoded.components[0]?.options).toEqual(workflow.components[0]?.options);
    expect(decoded.links).toEqual([{ from: 'inlet_1', to: 'writer_1' }]);
    expect(decoded.components[0]?.skillConfiguration?.outputs).toEqual({ entities: '_entities' });
  });

  it('names the RPCs as DESIGN.md does', () => {
    expect(SecretsService.decryptResources.path).toBe('/loom.v1.Secrets/DecryptResources');
    expect(WorkflowStoreService.watchWorkflows.responseStream).toBe(true);
  });

  it('ships a descriptor set for reflection', () => {
    expect(existsSync(descriptorSetPath)).toBe(true);
  });
});
