import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { SecretsClient } from '@loom/contracts';
import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call, createClient, fieldViolationsOf } from '@loom/service-kit';
import { failure } from '@loom/service-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';

const TOKEN = 'Bearer sk-live-4c1d9e7a2b6f08355e1a';
const TYPED_KEY = 'typed-in-clear-key-91b3c5';

const INLET = 'Orders_0b7e2d61-3f4a-4c5b-9d8e-7f6a5b4c3d2e';
const ENRICHER = 'Prices_1c8f3e72-4a5b-4d6c-8e9f-0a1b2c3d4e5f';
const SINK = 'Log_2d9a4f83-5b6c-4e7d-9f0a-1b2c3d4e5f6a';

let harness: ExecutorHarness;
let secrets: SecretsClient;
let sealer: SecretsClient;
const configStoreToken = 'config-store-token-0123456789abcdef';
let server: Server;
let base: string;
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  harness = await startExecutor([`loom.auth.tokens.config-store=${configStoreToken}`]);
  secrets = createClient(SecretsClient, `127.0.0.1:${harness.running.port}`, { retry: false });
  // SealConfiguration is the config store's to call: only its identity holds the seal permission
  sealer = createClient(SecretsClient, `127.0.0.1:${harness.running.port}`, { retry: false, token: configStoreToken });
  server = createServer((request, response) => {
    seen.push(request.headers);
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"price":3}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  secrets.close();
  sealer.close();
  await harness.stop();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** The files the store holds (none before its first push: it makes its directory then). */
const storedFiles = (): string[] => (existsSync(harness.workflowsDir) ? readdirSync(harness.workflowsDir) : []);

function enricherWorkflow(name: string, headers: unknown) {
  return workflowOf(
    name,
    [
      instance(COMPONENT_KINDS.INLET, INLET),
      instance(COMPONENT_KINDS.HTTP_ENRICHER, ENRICHER, { url: `${base}/prices/{sku}`, headers }),
      instance(COMPONENT_KINDS.LOGGER, SINK),
    ],
    [
      [INLET, ENRICHER],
      [ENRICHER, SINK],
    ],
  );
}

describe('secrets in enricher headers', () => {
  it('seals $$VAR references and credential headers at push, and the enricher sends the plain values', async () => {
    await call(secrets, 'createVariable', { key: 'PRICES_TOKEN', value: TOKEN, encrypted: true, userUuid: '' });
    // the headers option as JSON text, as an editor may write it
    const headers = JSON.stringify({ authorization: '$$PRICES_TOKEN', 'x-api-key': TYPED_KEY, 'accept-language': 'en' });
    const put = await call(harness.store, 'putWorkflow', {
      workflow: workflowToProto(enricherWorkflow('Prices_5e0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d', headers)),
    });
    const name = put.summary?.name ?? '';

    const file = readdirSync(harness.workflowsDir).find((entry) => entry.startsWith(name) && entry.endsWith('.workflow.json'));
    const text = readFileSync(join(harness.workflowsDir, file ?? 'missing'), 'utf8');
    expect(text).not.toContain('sk-live');
    expect(text).not.toContain(TYPED_KEY);
    expect(text).not.toContain('$$PRICES_TOKEN');
    const stored = JSON.parse(text) as { components: { name: string; options: { name: string; value: unknown }[] }[] };
    const storedHeaders = JSON.parse(
      stored.components.find((component) => component.name === ENRICHER)?.options.find((option) => option.name === 'headers')?.value as string,
    ) as Record<string, string>;
    expect(storedHeaders.authorization).toMatch(/^###AES-/);
    expect(storedHeaders['x-api-key']).toMatch(/^###AES-/);
    expect(storedHeaders['accept-language']).toBe('en');

    await call(harness.executor, 'startWorkflow', { name });
    await call(harness.executor, 'publishMessage', { workflowName: name, inlet: INLET, body: { sku: 'a-1' }, headers: {}, messageId: '' });
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(1);
    expect(seen[0]).toMatchObject({ authorization: TOKEN, 'x-api-key': TYPED_KEY, 'accept-language': 'en' });
    await call(harness.executor, 'stopWorkflow', { name });

    const log = harness.logLines.join('\n');
    expect(log).not.toContain('sk-live');
    expect(log).not.toContain(TYPED_KEY);
  });

  it('refuses a push whose header names an unknown variable, naming the header, and stores nothing', async () => {
    const name = 'Broken prices_6f1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e';
    const refused = await failure(
      call(harness.store, 'putWorkflow', { workflow: workflowToProto(enricherWorkflow(name, { authorization: '$$NO_SUCH_TOKEN' })) }),
    );
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(refused)).toEqual([
      expect.objectContaining({ field: 'components[1].options.headers.authorization', description: "refers to unknown variable 'NO_SUCH_TOKEN'" }),
    ]);
    expect(storedFiles().some((entry) => entry.startsWith('Broken prices'))).toBe(false);
  });

  it('refuses headers whose JSON text is malformed, naming the option, never quoting it, and stores nothing', async () => {
    const name = 'Torn headers_7a2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
    // the closing brace is missing: sealing cannot read it, so it must not be stored in clear
    const headers = '{"Authorization": "Bearer s3cr3t-torn-91"';
    const refused = await failure(call(harness.store, 'putWorkflow', { workflow: workflowToProto(enricherWorkflow(name, headers)) }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(refused)).toEqual([expect.objectContaining({ field: 'components[1].options[1].value', reason: 'UNREADABLE_SECRET_OPTION' })]);
    expect(refused.details).not.toContain('s3cr3t');
    expect(storedFiles().some((entry) => entry.startsWith('Torn headers'))).toBe(false);
    expect(harness.logLines.join('\n')).not.toContain('s3cr3t-torn');
  });

  it('SealConfiguration takes secret slots only: a whole workflow, headers it cannot read among them, is refused', async () => {
    const workflow = enricherWorkflow('Direct seal_8b3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a', '{"Authorization": "Bearer s3cr3t-direct"');
    const refused = await failure(call(sealer, 'sealConfiguration', { workflow: workflowToProto(workflow), slots: [], workflowName: '' }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(refused)).toEqual([expect.objectContaining({ field: 'workflow', reason: 'UNSUPPORTED_FIELD' })]);
    expect(refused.details).not.toContain('s3cr3t');
  });
});
