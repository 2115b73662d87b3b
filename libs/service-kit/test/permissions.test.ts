import { status, type ServiceError } from '@grpc/grpc-js';
import * as contracts from '@loom/contracts';
import { SecretsClient, SecretsService, WorkflowStoreClient, WorkflowStoreService } from '@loom/contracts';
import { type LoomRole } from '@loom/config';
import { TokenValidator } from '@loom/identity';
import { FakeIdentityProvider } from '@loom/identity/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  Authenticator,
  call,
  type CallContext,
  createClient,
  LoomServer,
  PERMISSIONS,
  type Refusal,
  ROLE_PERMISSIONS,
  RPC_PERMISSIONS,
  SERVICE_PERMISSIONS,
  unimplemented,
} from '../src/index.js';
import { capturedLogger } from '../src/testing.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Every RPC path of every service definition the contracts export. */
function contractRpcPaths(): string[] {
  const paths: string[] = [];
  for (const [name, value] of Object.entries(contracts)) {
    if (!name.endsWith('Service') || typeof value !== 'object' || value === null) continue;
    for (const method of Object.values(value as Record<string, unknown>)) {
      const path = (method as { path?: unknown }).path;
      if (typeof path === 'string') paths.push(path);
    }
  }
  return paths;
}

describe('the permission table', () => {
  it('assigns exactly one permission to every RPC of every service, and names no RPC that does not exist', () => {
    const rpcs = contractRpcPaths();
    expect(rpcs.length).toBeGreaterThan(30);
    const missing = rpcs.filter((path) => !Object.hasOwn(RPC_PERMISSIONS, path));
    expect(missing, 'RPCs without a permission in libs/service-kit/src/permissions.ts').toEqual([]);
    const stale = Object.keys(RPC_PERMISSIONS).filter((path) => !rpcs.includes(path));
    expect(stale, 'permission table entries for RPCs the contracts do not have').toEqual([]);
    for (const permission of Object.values(RPC_PERMISSIONS)) expect(PERMISSIONS).toContain(permission);
  });

  it('keeps decryption and sealing to the services that need them', () => {
    const holders = (permission: string): string[] => [
      ...Object.entries(ROLE_PERMISSIONS)
        .filter(([, permissions]) => (permissions as readonly string[]).includes(permission))
        .map(([role]) => `role ${role}`),
      ...Object.entries(SERVICE_PERMISSIONS)
        .filter(([, permissions]) => (permissions as readonly string[]).includes(permission))
        .map(([service]) => service),
    ];
    expect(holders('decrypt')).toEqual(['executor']);
    expect(holders('seal')).toEqual(['config-store']);
    expect(holders('reseal')).toEqual(['role admin', 'secrets']);
    expect(holders('append-audit')).not.toContain('role admin');
  });
});

interface Harness {
  address: string;
  refusals: Refusal[];
  identities: (string | undefined)[];
}

const tokens = {
  viewer: 'viewer-token-0123456789',
  editor: 'editor-token-0123456789',
  operator: 'operator-token-0123456789',
  admin: 'admin-token-0123456789',
  norole: 'norole-token-0123456789',
} as const;

/** A server with Secrets and WorkflowStore answering every call, behind the permission table. */
async function serve(options: { signIn?: TokenValidator; allowAnonymous?: boolean } = {}): Promise<Harness> {
  const { logger } = capturedLogger();
  const refusals: Refusal[] = [];
  const identities: (string | undefined)[] = [];
  const roles: Record<string, LoomRole[]> = { viewer: ['viewer'], editor: ['editor'], operator: ['operator'], admin: ['admin'] };
  const server = new LoomServer({
    logger,
    authenticator: new Authenticator({
      tokens,
      roles,
      allowAnonymous: options.allowAnonymous ?? false,
      clientCertificates: false,
      ...(options.signIn === undefined ? {} : { signIn: { verifier: options.signIn, rolePrefix: 'loom_' } }),
      onRefused: (refusal) => refusals.push(refusal),
    }),
  });
  const answer =
    <T>(value: T) =>
    (_request: unknown, context: CallContext): Promise<T> => {
      identities.push(context.identity);
      return Promise.resolve(value);
    };
  server.addService('loom.v1.Secrets', SecretsService, {
    ...unimplemented(SecretsService, {} as never),
    getVariable: answer({ variable: undefined }),
    rotateKey: answer({ activeKeyId: 'k2', variablesReencrypted: 0, workflowsReencrypted: 0, workflowsLeft: [] }),
  });
  server.addService('loom.v1.WorkflowStore', WorkflowStoreService, {
    ...unimplemented(WorkflowStoreService, {} as never),
    putWorkflow: answer({ summary: undefined, metadata: undefined, unchanged: false }),
    listWorkflows: answer({ workflows: [], nextPageToken: '' }),
  });
  const port = await server.listen('127.0.0.1', 0);
  cleanups.push(() => server.shutdown(1000));
  return { address: `127.0.0.1:${port}`, refusals, identities };
}

function clients(address: string, token: string | undefined): { secrets: SecretsClient; store: WorkflowStoreClient } {
  const options = { retry: false as const, ...(token === undefined ? {} : { token }) };
  const secrets = createClient(SecretsClient, address, options);
  const store = createClient(WorkflowStoreClient, address, options);
  cleanups.push(() => {
    secrets.close();
    store.close();
  });
  return { secrets, store };
}

async function codeOf(promise: Promise<unknown>): Promise<status | 'OK'> {
  try {
    await promise;
    return 'OK';
  } catch (error) {
    return (error as ServiceError).code;
  }
}

const push = {};
const list = { pageSize: 0, pageToken: '' };

describe('roles', () => {
  it('let each role do its own work and refuse the rest with PERMISSION_DENIED, each refusal reported for the audit log', async () => {
    const harness = await serve();
    const as = (role: keyof typeof tokens) => clients(harness.address, tokens[role]);
    const outcomes = {
      viewerLists: await codeOf(call(as('viewer').store, 'listWorkflows', list)),
      viewerPushes: await codeOf(call(as('viewer').store, 'putWorkflow', push)),
      editorPushes: await codeOf(call(as('editor').store, 'putWorkflow', push)),
      editorReadsVariables: await codeOf(call(as('editor').secrets, 'getVariable', { key: 'k' })),
      editorRotates: await codeOf(call(as('editor').secrets, 'rotateKey', { keyId: '' })),
      operatorReadsVariables: await codeOf(call(as('operator').secrets, 'getVariable', { key: 'k' })),
      adminRotates: await codeOf(call(as('admin').secrets, 'rotateKey', { keyId: '' })),
      noRoleLists: await codeOf(call(as('norole').store, 'listWorkflows', list)),
      anonymousLists: await codeOf(call(clients(harness.address, undefined).store, 'listWorkflows', list)),
    };
    expect(outcomes).toEqual({
      viewerLists: 'OK',
      viewerPushes: status.PERMISSION_DENIED,
      editorPushes: 'OK',
      editorReadsVariables: 'OK',
      editorRotates: status.PERMISSION_DENIED,
      operatorReadsVariables: status.PERMISSION_DENIED,
      adminRotates: 'OK',
      noRoleLists: status.PERMISSION_DENIED,
      anonymousLists: status.UNAUTHENTICATED,
    });
    expect(harness.refusals.filter((refusal) => refusal.code === status.PERMISSION_DENIED).map((refusal) => [refusal.identity, refusal.path])).toEqual([
      ['viewer', '/loom.v1.WorkflowStore/PutWorkflow'],
      ['editor', '/loom.v1.Secrets/RotateKey'],
      ['operator', '/loom.v1.Secrets/GetVariable'],
      ['norole', '/loom.v1.WorkflowStore/ListWorkflows'],
    ]);
  });
});

describe('sign-in with the identity provider', () => {
  it("takes a provider's token as the user, with loom roles from the prefixed client roles", async () => {
    const provider = await FakeIdentityProvider.start();
    cleanups.push(() => provider.close());
    const harness = await serve({ signIn: new TokenValidator(provider.config()) });
    const editorToken = await provider.sign({ preferred_username: 'alice', ...FakeIdentityProvider.clientRoles('loom', ['LOOM_Editor', 'NEO4J_admin']) });
    expect(await codeOf(call(clients(harness.address, editorToken).store, 'putWorkflow', push))).toBe('OK');
    expect(harness.identities).toEqual(['user:alice']);
    expect(await codeOf(call(clients(harness.address, editorToken).secrets, 'rotateKey', { keyId: '' }))).toBe(status.PERMISSION_DENIED);

    const expired = await provider.sign({ exp: Math.floor(Date.now() / 1000) - 3600 });
    const refused = call(clients(harness.address, expired).store, 'listWorkflows', list);
    await expect(refused).rejects.toMatchObject({ code: status.UNAUTHENTICATED, details: 'invalid access token' });
    expect(harness.refusals.at(-1)?.reason).toBe('access token refused: expired');
  });
});
