import { existsSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, freePort, messagesOut, runAsync, startWorkflow, type ServiceProcess, startService, stopService } from './processes.js';
import { imageSpec, repoRoot, scratchDir } from './tools.js';

/**
 * The image's build and start sequence without a Docker engine: deploy/image/assemble.mjs (the
 * build stage's last step) into a temp directory standing for /opt/loom, then the final stage's
 * ENTRYPOINT and CMD with its ENV and WORKDIR, /var/lib/loom standing for the volume.
 */
const INSTALL = '/opt/loom';
const DATA = '/var/lib/loom';
const WORKFLOW = 'Graph import';
const INLET = 'People_6b7c8d9e-0f1a-4b2c-9d3e-4f5a6b7c8d9e';
const OPERATOR_TOKEN = 'operator-token-0123456789abcdef';

/** Every path under a directory with its size and modification time (symbolic links not followed). */
function snapshot(root: string): Map<string, string> {
  const entries = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = lstatSync(path);
      entries.set(relative(root, path), `${stat.size} ${stat.mtimeMs}`);
      if (stat.isDirectory()) walk(path);
    }
  };
  walk(root);
  return entries;
}

describe('the production installation, started as the image starts it', () => {
  const image = imageSpec();
  const base = scratchDir('image');
  const install = join(base, 'opt-loom');
  const data = join(base, 'var-lib-loom');
  const tmp = join(base, 'tmp');
  const secrets = join(base, 'run-secrets');
  let loom: ServiceProcess;
  let before: Map<string, string>;
  let env: NodeJS.ProcessEnv;
  let address: string;
  const mapPath = (value: string): string =>
    value
      .replace(INSTALL, install)
      .replace(DATA, data)
      .replace(/^\/tmp$/, tmp);
  const cli = (args: readonly string[], input?: string) =>
    runAsync(process.execPath, ['--no-node-snapshot', join(install, 'services/cli/dist/main.js'), '--address', address, ...args], {
      cwd: data,
      env,
      ...(input === undefined ? {} : { input }),
    });

  beforeAll(async () => {
    // asynchronously: a minute of blocked event loop would cut this worker off from vitest
    const assembled = await runAsync(process.execPath, [join(repoRoot, 'deploy/image/assemble.mjs'), repoRoot, install], { cwd: repoRoot, env: process.env });
    expect(assembled.status, assembled.stderr).toBe(0);
    for (const dir of [data, tmp, secrets]) mkdirSync(dir, { recursive: true, mode: 0o700 });
    // what an operator gives `docker run`: the key and a token as secret files
    writeFileSync(join(secrets, 'encryption-key'), Buffer.alloc(32, 7).toString('base64'));
    writeFileSync(join(secrets, 'token-operator'), OPERATOR_TOKEN);
    before = snapshot(install);

    const port = await freePort();
    address = `127.0.0.1:${port}`;
    env = {
      PATH: process.env.PATH,
      ...Object.fromEntries(Object.entries(image.env).map(([key, value]) => [key, mapPath(value)])),
      // loopback here instead of the image's 0.0.0.0; a free port instead of 8100 (other tests run beside)
      SERVER_HOST: '127.0.0.1',
      SERVER_PORT: String(port),
      LOOM_TELEMETRY_PROMETHEUS_PORT: String(await freePort()),
      LOOM_SECRETS_KEYS_K1_FILE: join(secrets, 'encryption-key'),
      LOOM_SECRETS_ACTIVEKEYID: 'k1',
      LOOM_AUTH_TOKENS_OPERATOR_FILE: join(secrets, 'token-operator'),
      LOOM_AUTH_ROLES_OPERATOR: 'admin',
      LOOM_TOKEN: OPERATOR_TOKEN,
    };
    const [command, ...args] = [...image.entrypoint, ...image.cmd].map(mapPath);
    expect(command).toBe('node');
    loom = await startService('loom', process.execPath, args, { cwd: mapPath(image.workdir), env });
  });

  afterAll(async () => {
    if (loom !== undefined) await stopService(loom, 'SIGKILL');
  });

  it('has production dependencies only, the built native addon, no sources or tests', () => {
    for (const development of ['vitest', 'typescript', 'nx', 'eslint', 'node-red', 'kubernetes-models', '@vitest']) {
      expect(existsSync(join(install, 'node_modules', development)), development).toBe(false);
    }
    expect(existsSync(join(install, 'node_modules/isolated-vm/out/isolated_vm.node'))).toBe(true);
    expect(existsSync(join(install, 'services/executor/src'))).toBe(false);
    expect(existsSync(join(install, 'services/executor/test'))).toBe(false);
    expect(existsSync(join(install, 'services/executor/dist/index.js'))).toBe(true);
    expect(existsSync(join(install, 'services/executor/script-host/python-host.mjs'))).toBe(true);
    expect(existsSync(join(install, 'libs/contracts/descriptor/loom.binpb'))).toBe(true);
  });

  it('is healthy, in production mode, with the image flags', async () => {
    const health = await cli(['health']);
    expect(health.stdout + health.stderr).toMatch(/loom\.v1\.Executor\s+SERVING/);
    expect(health.status).toBe(0);
    const started = loom.logLines.map((line) => JSON.parse(line) as { msg: string; path?: string });
    expect(started.find((entry) => entry.msg === 'audit logging')?.path).toBe(join(data, 'audit.log'));
    expect(image.entrypoint).toContain('--no-node-snapshot');
    expect(image.user).toBe('10001:10001');
    expect(image.volumes).toEqual([DATA]);
  });

  it('keeps every piece of state under the data directory and writes nothing to the installation', async () => {
    const pushed = await cli(['workflow', 'push', join(repoRoot, 'examples/graph-import.workflow.json')]);
    expect(pushed.status, pushed.stderr).toBe(0);
    const variable = await cli(['variable', 'create', 'GRAPH_PASSWORD', '--encrypted'], 'not-in-any-file');
    expect(variable.status, variable.stderr).toBe(0);
    await startWorkflow(address, OPERATOR_TOKEN, WORKFLOW);
    const published = await cli(['message', 'publish', WORKFLOW, '--inlet', INLET, '--body', '{"id":1,"name":"Ada"}']);
    expect(published.status, published.stderr).toBe(0);
    await eventually('the message written to the embedded graph', async () =>
      (await messagesOut(address, OPERATOR_TOKEN, WORKFLOW, 'Write people')) === 1 ? true : undefined,
    );
    expect(await stopService(loom, 'SIGTERM')).toEqual({ code: 0, signal: null });

    const state = readdirSync(data).sort();
    expect(state).toEqual(expect.arrayContaining(['audit.log', 'graphdata', 'pgdata', 'workflows']));
    expect(readdirSync(join(data, 'workflows')).some((name) => name.startsWith('Graph import_') && name.endsWith('.workflow.json'))).toBe(true);
    expect(existsSync(join(data, 'audit.log'))).toBe(true);
    const after = snapshot(install);
    const changed = [...after].filter(([path, stat]) => before.get(path) !== stat).map(([path]) => path);
    const removed = [...before.keys()].filter((path) => !after.has(path));
    expect({ changed, removed }).toEqual({ changed: [], removed: [] });
  });
});
