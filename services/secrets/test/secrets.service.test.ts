import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workflowFromProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit';
import { startTelemetry, type Telemetry } from '@loom/telemetry';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fieldViolationsOf } from '@loom/service-kit';
import {
  type Backend,
  embeddedBackend,
  failure,
  graphWorkflow,
  realBackend,
  type SecretsHarness,
  openVia,
  resealCalls,
  sealVia,
  startSecrets,
  status,
} from './harness.js';
import { testDatabaseUrl } from '@loom/testing';

const realUrl = testDatabaseUrl('secrets');

const backends: [string, () => Backend][] = [['embedded PGlite', embeddedBackend]];
if (realUrl !== undefined) backends.push(['PostgreSQL server', () => realBackend(realUrl)]);

const PLAIN = 'correct-horse-battery-staple-7f3a';

const spans = new InMemorySpanExporter();
let telemetry: Telemetry;
beforeAll(() => {
  telemetry = startTelemetry({ serviceName: 'secrets-test', spanProcessors: [new SimpleSpanProcessor(spans)] });
});
afterAll(() => telemetry.shutdown());
const userUuid = '6f1c2b4e-8d3a-4f5e-9a7b-0c1d2e3f4a5b';

function passwordOf(workflow: ReturnType<typeof graphWorkflow> | undefined): unknown {
  return workflow === undefined ? undefined : workflowFromProto(workflow).resources[0]?.parameters.password;
}

describe.each(backends)('secrets service on %s', (_name, makeBackend) => {
  let backend: Backend;
  let secrets: SecretsHarness;

  beforeAll(async () => {
    backend = makeBackend();
    secrets = await startSecrets(backend);
  });
  afterAll(async () => {
    await secrets.stop();
    await backend.cleanup();
  });
  // each test starts from the same two variables, whatever ran before it
  beforeEach(async () => {
    await secrets.query('DELETE FROM public.ecosystem_variable');
    await call(secrets.anonymous, 'createVariable', { key: 'NEO4J_PASSWORD', value: PLAIN, encrypted: true, userUuid });
    await call(secrets.anonymous, 'createVariable', { key: 'NEO4J_HOST', value: 'graph.internal', encrypted: false, userUuid: '' });
  });

  it('stores an encrypted variable only as encrypted text, and shows it only as ###AES-', async () => {
    await call(secrets.anonymous, 'deleteVariable', { key: 'NEO4J_PASSWORD' });
    const { variable } = await call(secrets.anonymous, 'createVariable', { key: 'NEO4J_PASSWORD', value: PLAIN, encrypted: true, userUuid });
    expect(variable?.value.startsWith('###AES-')).toBe(true);
    expect(variable?.createdByUuid).toBe(userUuid);
    expect(variable?.lastUpdatedByUuid).toBe('');

    const [row] = await secrets.query<{ encrypted: boolean; value: string; created_by_uuid: string; last_updated_by_uuid: string | null }>(
      'SELECT encrypted, value, created_by_uuid, last_updated_by_uuid FROM public.ecosystem_variable WHERE key = $1',
      ['NEO4J_PASSWORD'],
    );
    expect(row?.encrypted).toBe(true);
    expect(row?.value).not.toContain(PLAIN);
    // The row holds the bare encrypted text; callers and files see it behind ###AES-.
    expect(`###AES-${row?.value}`).toBe(variable?.value);
    expect(row?.last_updated_by_uuid).toBeNull();

    const listed = await call(secrets.anonymous, 'listVariables', { pageSize: 0, pageToken: '' });
    expect(JSON.stringify(listed)).not.toContain(PLAIN);
    const got = await call(secrets.anonymous, 'getVariable', { key: 'NEO4J_PASSWORD' });
    expect(got.variable?.value).toBe(variable?.value);
  });

  it('seals $$ references and plain passwords; only the executor decrypts', async () => {
    const { workflow: sealed } = await sealVia(secrets.configStore, graphWorkflow('$$NEO4J_PASSWORD', { host: '$$NEO4J_HOST' }));
    const sealedJson = JSON.stringify(sealed);
    expect(sealedJson).not.toContain(PLAIN);
    expect(passwordOf(sealed)).toMatch(/^###AES-[A-Za-z0-9_-]+$/);
    expect(workflowFromProto(sealed).resources[0]?.parameters.host).toBe('graph.internal');

    const { workflow: opened } = await openVia(secrets.executor, sealed);
    expect(passwordOf(opened)).toBe(PLAIN);

    expect((await failure(openVia(secrets.configStore, sealed))).code).toBe(status.PERMISSION_DENIED);
    expect((await failure(openVia(secrets.anonymous, sealed))).code).toBe(status.UNAUTHENTICATED);

    const { workflow: plainSealed } = await sealVia(secrets.configStore, graphWorkflow('typed-in-clear'));
    expect(passwordOf(plainSealed)).toMatch(/^###AES-/);
    const { workflow: plainOpened } = await openVia(secrets.executor, plainSealed);
    expect(passwordOf(plainOpened)).toBe('typed-in-clear');
  });

  it('answers each failure with its own clear status', async () => {
    const unknown = await failure(sealVia(secrets.configStore, graphWorkflow('$$NO_SUCH_VARIABLE')));
    expect(unknown.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(unknown)).toEqual([
      { field: 'resources[0].parameters.password', description: "refers to unknown variable 'NO_SUCH_VARIABLE'", reason: 'UNKNOWN_VARIABLE' },
    ]);

    const duplicate = await failure(call(secrets.anonymous, 'createVariable', { key: 'NEO4J_PASSWORD', value: 'x', encrypted: true, userUuid: '' }));
    expect(duplicate.code).toBe(status.ALREADY_EXISTS);
    expect(duplicate.details).toBe("variable 'NEO4J_PASSWORD' already exists");

    const { workflow: sealed } = await sealVia(secrets.configStore, graphWorkflow('$$NEO4J_PASSWORD'));
    const text = String(passwordOf(sealed)).slice('###AES-'.length);
    const bytes = Buffer.from(text, 'base64url');
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 0x55;
    const tampered = await failure(openVia(secrets.executor, graphWorkflow(`###AES-${bytes.toString('base64url')}`)));
    expect(tampered.code).toBe(status.FAILED_PRECONDITION);
    expect(tampered.details).toMatch(/^resources\[0\]\.parameters\.password: encrypted value failed authentication/);

    const foreign = Buffer.from(text, 'base64url');
    const idLength = foreign[1] ?? 0;
    const otherKey = Buffer.concat([Buffer.from([1, 5]), Buffer.from('k-old'), foreign.subarray(2 + idLength)]);
    const unknownKey = await failure(openVia(secrets.executor, graphWorkflow(`###AES-${otherKey.toString('base64url')}`)));
    expect(unknownKey.code).toBe(status.FAILED_PRECONDITION);
    expect(unknownKey.details).toBe("resources[0].parameters.password: encrypted with key 'k-old', which is not in the key ring");

    const badKey = await failure(call(secrets.anonymous, 'createVariable', { key: '1 bad key', value: 'x', encrypted: false, userUuid: '' }));
    expect(badKey.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(badKey)[0]?.field).toBe('key');

    const missing = await failure(call(secrets.anonymous, 'getVariable', { key: 'ABSENT' }));
    expect(missing.code).toBe(status.NOT_FOUND);
  });

  it('exchanges secret slots only: a whole workflow is refused, and the answer holds the slots sent, in order', async () => {
    for (const refused of [
      await failure(call(secrets.configStore, 'sealConfiguration', { workflow: graphWorkflow('$$NEO4J_PASSWORD'), slots: [], workflowName: '' })),
      await failure(call(secrets.executor, 'decryptResources', { workflow: graphWorkflow('###AES-x'), slots: [], workflowName: '' })),
    ]) {
      expect(refused.code).toBe(status.INVALID_ARGUMENT);
      expect(fieldViolationsOf(refused)).toEqual([expect.objectContaining({ field: 'workflow', reason: 'UNSUPPORTED_FIELD' })]);
    }
    const slots = [
      { path: 'resources[0].parameters.password', value: '$$NEO4J_PASSWORD', sensitive: true },
      { path: 'components[1].options.headers.x-api-key', value: 'typed-key', sensitive: true },
      { path: 'resources[0].parameters.host', value: 'plain-host', sensitive: false },
    ];
    const sealed = await call(secrets.configStore, 'sealConfiguration', { workflow: undefined, slots, workflowName: 'w' });
    expect(sealed.workflow).toBeUndefined();
    expect(sealed.slots.map((slot) => slot.path)).toEqual(slots.map((slot) => slot.path));
    expect(sealed.slots.map((slot) => slot.value.startsWith('###AES-'))).toEqual([true, true, false]);
    const opened = await call(secrets.executor, 'decryptResources', { workflow: undefined, slots: sealed.slots, workflowName: 'w' });
    expect(opened.slots.map((slot) => slot.value)).toEqual([PLAIN, 'typed-key', 'plain-host']);
    const noPath = await failure(
      call(secrets.configStore, 'sealConfiguration', { workflow: undefined, slots: [{ path: '', value: 'x', sensitive: true }], workflowName: 'w' }),
    );
    expect(fieldViolationsOf(noPath)).toEqual([expect.objectContaining({ field: 'slots[0].path' })]);
  });

  it('updates a variable and records who did it', async () => {
    const editor = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    const { variable } = await call(secrets.anonymous, 'updateVariable', { key: 'NEO4J_HOST', encrypted: true, userUuid: editor });
    expect(variable?.encrypted).toBe(true);
    expect(variable?.lastUpdatedByUuid).toBe(editor);
    const [row] = await secrets.query<{ value: string }>('SELECT value FROM public.ecosystem_variable WHERE key = $1', ['NEO4J_HOST']);
    expect(row?.value).not.toContain('graph.internal');
    const toClear = await failure(call(secrets.anonymous, 'updateVariable', { key: 'NEO4J_HOST', encrypted: false, userUuid: editor }));
    expect(toClear.code).toBe(status.FAILED_PRECONDITION);
  });

  it('rotates the key: every variable re-encrypted, still readable, old workflows still open', async () => {
    const { workflow: sealedBefore } = await sealVia(secrets.configStore, graphWorkflow('$$NEO4J_PASSWORD'));
    const before = await secrets.query<{ key: string; value: string }>('SELECT key, value FROM public.ecosystem_variable WHERE encrypted ORDER BY key');
    const resealsBefore = resealCalls.count;
    const rotated = await call(secrets.anonymous, 'rotateKey', { keyId: '' });
    expect(rotated.variablesReencrypted).toBe(before.length);
    expect(resealCalls.count).toBe(resealsBefore + 1);
    const after = await secrets.query<{ key: string; value: string }>('SELECT key, value FROM public.ecosystem_variable WHERE encrypted ORDER BY key');
    expect(after.map((row) => row.key)).toEqual(before.map((row) => row.key));
    after.forEach((row, i) => expect(row.value).not.toBe(before[i]?.value));

    const { workflow: sealedAfter } = await sealVia(secrets.configStore, graphWorkflow('$$NEO4J_PASSWORD'));
    for (const sealed of [sealedBefore, sealedAfter]) {
      const { workflow: opened } = await openVia(secrets.executor, sealed);
      expect(passwordOf(opened)).toBe(PLAIN);
    }
    const storage = await call(secrets.anonymous, 'describeStorage', {});
    expect(storage.activeKeyId).toBe(rotated.activeKeyId);
  });

  it('deletes a variable', async () => {
    await call(secrets.anonymous, 'deleteVariable', { key: 'NEO4J_HOST' });
    expect((await failure(call(secrets.anonymous, 'deleteVariable', { key: 'NEO4J_HOST' }))).code).toBe(status.NOT_FOUND);
  });

  it('never put a test secret in clear into its log or its spans', async () => {
    // whatever ran before: this test's own work logs and traces too (a decryption with the secret in it)
    const { workflow: sealed } = await sealVia(secrets.configStore, graphWorkflow('$$NEO4J_PASSWORD'));
    expect(passwordOf((await openVia(secrets.executor, sealed)).workflow)).toBe(PLAIN);
    expect(secrets.logLines.length).toBeGreaterThan(0);
    const log = secrets.logLines.join('\n');
    const traced = JSON.stringify(
      spans.getFinishedSpans().map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status })),
    );
    expect(traced).toContain('loom.v1.Secrets/DecryptResources');
    for (const secret of [PLAIN, 'typed-in-clear', 'graph.internal']) {
      expect(log).not.toContain(secret);
      expect(traced).not.toContain(secret);
    }
  });
});

describe('secrets service restart (embedded)', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('keeps variables and keys across restarts of the embedded database', async () => {
    const backend = embeddedBackend();
    const first = await startSecrets(backend);
    await call(first.anonymous, 'createVariable', { key: 'API_TOKEN', value: PLAIN, encrypted: true, userUuid: '' });
    const { workflow: sealed } = await sealVia(first.configStore, graphWorkflow('$$API_TOKEN'));
    await first.stop();

    const second = await startSecrets(backend, { keyRingFile: first.keyRingFile });
    cleanups.push(() => second.stop());
    const { workflow: opened } = await openVia(second.executor, sealed);
    expect(passwordOf(opened)).toBe(PLAIN);
    expect((await call(second.anonymous, 'listVariables', { pageSize: 0, pageToken: '' })).variables.map((v) => v.key)).toEqual(['API_TOKEN']);
  });

  it('generates no key unless loom.secrets.generateKeys says so: the default refuses to start, whatever NODE_ENV is', async () => {
    const keyRingFile = join(mkdtempSync(join(tmpdir(), 'loom-keys-')), 'keyring.json');
    const nodeEnv = process.env.NODE_ENV;
    process.env.NODE_ENV = 'development';
    try {
      const refused = startSecrets(embeddedBackend(), { keyRingFile, extraOverrides: ['loom.secrets.generateKeys=false'] });
      await expect(refused).rejects.toThrow(/no encryption key configured: set loom\.secrets\.keys\.<id>/);
      expect(existsSync(keyRingFile)).toBe(false);
    } finally {
      process.env.NODE_ENV = nodeEnv;
    }
    const key = randomBytes(32).toString('base64');
    const configured = await startSecrets(embeddedBackend(), {
      keyRingFile,
      extraOverrides: ['loom.secrets.generateKeys=false', `loom.secrets.keys.k1=${key}`],
    });
    cleanups.push(() => configured.stop());
    expect((await call(configured.anonymous, 'describeStorage', {})).activeKeyId).toBe('k1');
    expect((await failure(call(configured.anonymous, 'rotateKey', { keyId: '' }))).details).toMatch(/loom\.secrets\.generateKeys is false/);
    expect(existsSync(keyRingFile)).toBe(false);
  });
});
