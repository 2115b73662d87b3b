import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecutorClient, SecretsClient, WorkflowState, WorkflowStoreClient } from '@loom/contracts';
import { COMPONENT_KINDS, componentInstance } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, createClient } from '@loom/service-kit';
import { afterEach, describe, expect, it } from 'vitest';
import { type InProcessLoom, startLoom } from './loom-in-process.js';
import { uuid } from './scheduled-workflows.js';

const OLD = randomBytes(32).toString('base64');
const NEW = randomBytes(32).toString('base64');
const TOKEN = 'Bearer rotation-secret-3a7c51';

/** The id of the key a `###AES-` value names (the payload is `version | id length | id | ...`, base64url). */
function keyIdsIn(text: string): string[] {
  return [...text.matchAll(/###AES-([A-Za-z0-9_-]+)/g)].map(([, payload]) => {
    const bytes = Buffer.from(payload ?? '', 'base64url');
    return bytes.subarray(2, 2 + (bytes[1] ?? 0)).toString('utf8');
  });
}

function enricherWorkflow(index: number, headers: Record<string, string>) {
  const inlet = componentInstance(COMPONENT_KINDS.INLET, `In_${uuid(index * 10 + 1)}`);
  const enricher = componentInstance(COMPONENT_KINDS.HTTP_ENRICHER, `Call_${uuid(index * 10 + 2)}`, { url: 'http://127.0.0.1:9/x', headers });
  const sink = componentInstance(COMPONENT_KINDS.LOGGER, `Log_${uuid(index * 10 + 3)}`);
  return {
    name: `Rotated ${index}_${uuid(index * 10)}`,
    autoStart: false,
    components: [inlet, enricher, sink],
    links: [
      { from: inlet.name, to: enricher.name },
      { from: enricher.name, to: sink.name },
    ],
    resources: [],
    skills: [],
    workflowResources: [],
  };
}

describe('RotateKey re-seals the stored workflows', () => {
  const data = mkdtempSync(join(tmpdir(), 'loom-rotation-'));
  const workflows = join(data, 'workflows');
  let loom: InProcessLoom | undefined;

  async function serve(
    keys: Record<string, string>,
    active: string,
  ): Promise<{ secrets: SecretsClient; store: WorkflowStoreClient; executor: ExecutorClient }> {
    loom = await startLoom([
      '--services',
      'secrets,config-store,audit,executor',
      '--set',
      `loom.data.directory=${data}`,
      '--set',
      'loom.auth.allowAnonymous=true',
      ...Object.entries(keys).flatMap(([id, key]) => ['--set', `loom.secrets.keys.${id}=${key}`]),
      '--set',
      `loom.secrets.activeKeyId=${active}`,
    ]);
    return {
      secrets: createClient(SecretsClient, loom.address, { retry: false }),
      store: createClient(WorkflowStoreClient, loom.address, { retry: false }),
      executor: createClient(ExecutorClient, loom.address, { retry: false }),
    };
  }
  async function stop(clients: Record<string, { close(): void }>): Promise<void> {
    for (const client of Object.values(clients)) client.close();
    await loom?.stop();
    loom = undefined;
  }
  afterEach(async () => {
    await loom?.stop();
  });

  it(
    'leaves nothing under the old key, finishes a cut-off re-seal when called again, and every workflow starts with the old key removed',
    { timeout: 120_000 },
    async () => {
      // 1. two workflows sealed under 'old': a $$ reference to an encrypted variable, and a credential header typed in clear
      let clients = await serve({ old: OLD, new: NEW }, 'old');
      await call(clients.secrets, 'createVariable', { key: 'CALL_TOKEN', value: TOKEN, encrypted: true, userUuid: '' });
      const names: string[] = [];
      for (const [index, headers] of [
        [1, { authorization: '$$CALL_TOKEN' }],
        [2, { 'x-api-key': 'typed-key-77d1', accept: 'application/json' }],
      ] as const) {
        const { summary } = await call(clients.store, 'putWorkflow', {
          workflow: workflowToProto(enricherWorkflow(index, headers)),
          expectedVersion: undefined,
        });
        names.push(summary?.name ?? '');
      }
      const fileOf = (name: string, suffix: string): string => join(workflows, `${name}${suffix}`);
      const [first, second] = names as [string, string];
      expect(keyIdsIn(readFileSync(fileOf(second, '.workflow.json'), 'utf8'))).toEqual(['old']);
      const saved = mkdtempSync(join(tmpdir(), 'loom-rotation-saved-'));
      for (const suffix of ['.workflow.json', '.json']) copyFileSync(fileOf(second, suffix), join(saved, suffix));

      // 2. rotate: both rewritten under 'new', versions kept; a second call finds nothing left to do
      const rotated = await call(clients.secrets, 'rotateKey', { keyId: 'new' });
      expect(rotated).toMatchObject({ activeKeyId: 'new', variablesReencrypted: 1, workflowsReencrypted: 2, workflowsLeft: [] });
      for (const name of names) {
        expect(keyIdsIn(readFileSync(fileOf(name, '.workflow.json'), 'utf8')).every((id) => id === 'new')).toBe(true);
        expect(JSON.parse(readFileSync(fileOf(name, '.json'), 'utf8'))).toMatchObject({ version: 1 });
      }
      expect((await call(clients.secrets, 'rotateKey', { keyId: 'new' })).workflowsReencrypted).toBe(0);
      await stop(clients);

      // 3. as if loom had died before rewriting the second workflow: its old files are back; calling again finishes
      for (const suffix of ['.workflow.json', '.json']) copyFileSync(join(saved, suffix), fileOf(second, suffix));
      clients = await serve({ old: OLD, new: NEW }, 'new');
      expect(await call(clients.secrets, 'rotateKey', { keyId: 'new' })).toMatchObject({ workflowsReencrypted: 1, workflowsLeft: [] });
      await stop(clients);
      expect(readdirSync(workflows).some((file) => file.endsWith('.tmp'))).toBe(false);

      // 4. the old key removed from the configuration: every stored workflow still starts
      clients = await serve({ new: NEW }, 'new');
      for (const name of [first, second]) {
        const started = await call(clients.executor, 'startWorkflow', { name });
        expect(started.state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
      }
      await stop(clients);
    },
  );
});
