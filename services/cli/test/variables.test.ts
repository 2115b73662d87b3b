import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, type InProcessLoom, runCli, startLoom } from './loom-in-process.js';

let loom: InProcessLoom;
beforeAll(async () => {
  loom = await startLoom(['--services', 'secrets,audit,config-store', '--set', 'loom.auth.allowAnonymous=true']);
});
afterAll(async () => {
  await loom.stop();
});

const loomAt = (...args: string[]): Promise<CliResult> => runCli(['--address', loom.address, ...args]);
const secret = 'stdin-secret-value-4e2a9c';

describe('loom variable and loom secrets', () => {
  it('creates an encrypted variable from standard input and never prints it in clear', async () => {
    const created = await runCli(['--address', loom.address, '--output', 'json', 'variable', 'create', 'NEO4J_PASSWORD', '--encrypted'], {
      input: `${secret}\n`,
    });
    expect(created.stderr).toBe('');
    expect(created.status).toBe(0);
    const variable = JSON.parse(created.stdout) as { key: string; value: string; encrypted: boolean };
    expect(variable).toMatchObject({ key: 'NEO4J_PASSWORD', encrypted: true });
    expect(variable.value).toMatch(/^###AES-/);

    const listed = await loomAt('variable', 'list');
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(/NEO4J_PASSWORD\s+true\s+###AES-/);
    expect(listed.stdout + (await loomAt('variable', 'get', 'NEO4J_PASSWORD')).stdout).not.toContain(secret);
  });

  it('rotates the key and re-encrypts the variables', async () => {
    expect((await loomAt('variable', 'create', 'ROTATED_TOKEN', '--value', 'rotate-me', '--encrypted')).status).toBe(0);
    // every encrypted variable there is (other tests' too), whatever ran before
    const encrypted = (JSON.parse((await loomAt('--output', 'json', 'variable', 'list')).stdout) as { encrypted: boolean }[]).filter((v) => v.encrypted).length;
    const rotated = await loomAt('--output', 'json', 'secrets', 'rotate');
    expect(rotated.status).toBe(0);
    expect(JSON.parse(rotated.stdout)).toMatchObject({ variablesReencrypted: encrypted });
    expect((await loomAt('variable', 'get', 'ROTATED_TOKEN')).status).toBe(0);
  });

  it('reports a failed call as one line with the status and the field', async () => {
    expect((await loomAt('variable', 'create', 'DUPLICATE_KEY', '--value', 'x')).status).toBe(0);
    const duplicate = await loomAt('variable', 'create', 'DUPLICATE_KEY', '--value', 'x');
    expect(duplicate.status).toBe(1);
    expect(duplicate.stderr.trim()).toBe("loom: ALREADY_EXISTS: variable 'DUPLICATE_KEY' already exists");
    const invalid = await loomAt('variable', 'create', '9lives', '--value', 'x');
    expect(invalid.stderr.trim()).toMatch(/^loom: INVALID_ARGUMENT: key: must start with a letter/);
  });

  it('shows where the variables live in `loom health`', async () => {
    const health = await loomAt('health');
    expect(health.status).toBe(0);
    expect(health.stdout).toMatch(/variables: embedded PostgreSQL at 127\.0\.0\.1:\d+ \(psql -h 127\.0\.0\.1 -p \d+ -U postgres postgres\)/);
  });

  it('deletes a variable', async () => {
    expect((await loomAt('variable', 'create', 'DELETED_KEY', '--value', 'x')).status).toBe(0);
    expect((await loomAt('variable', 'delete', 'DELETED_KEY')).status).toBe(0);
    expect((await loomAt('variable', 'get', 'DELETED_KEY')).stderr.trim()).toBe("loom: NOT_FOUND: variable 'DELETED_KEY' not found");
  });
});
