import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { dirname, join, relative, resolve } from 'node:path';
import { status } from '@grpc/grpc-js';
import { WorkflowState } from '@loom/contracts';
import { loadConfig } from '@loom/config';
import { COMPONENT_KINDS } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit';
import { createLogger } from '@loom/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComponentContext, type Processor } from '../src/runtime/component.js';
import { optionsOf } from '../src/runtime/options.js';
import { createPythonProcessor } from '../src/scripts/python.js';
import { INSTALLATION_DIR, pythonSandbox } from '../src/scripts/sandbox.js';
import { statePaths } from '../src/scripts/script-grants.js';
import { componentFailureEvents, type ExecutorHarness, instance, startExecutor, workflowOf } from './harness.js';
import { type Attack, python, pythonAttacks, pythonScript } from './python-attacks.js';

// Scripts that try to get out of their sandbox. Each attempt must fail its message with a clear
// error, the message must reach the failure handler, the audit log must get
// PRIVILEGED_WORKFLOW_COMPONENT_FAILURE, and the service must stay healthy. A secret planted in
// the service's environment must never show, and the loopback server must see no connection.

const SECRET = 'loom-adversarial-secret-5f1e9c27';
process.env.LOOM_ADVERSARIAL_SECRET = SECRET;
const STRAY_FILE = `/tmp/loom-adversarial-${process.pid}.txt`;

let server: Server;
let url: string;
let connections = 0;
let harness: ExecutorHarness;

const javascript = (name: string, code: string, error: RegExp): Attack => ({ name, code, error });
const JAVASCRIPT_ATTACKS = (): Attack[] => [
  javascript('process.env', 'return { env: process.env.LOOM_ADVERSARIAL_SECRET };', /process is not defined/),
  javascript('require', "return { fs: require('fs').readFileSync('/etc/passwd', 'utf8') };", /require is not defined/),
  javascript(
    'constructor chain to the host',
    "return { p: this.constructor.constructor('return process')().env };",
    /process is not defined|Cannot read properties of undefined/,
  ),
  javascript(
    'Function to globalThis.process',
    "return { p: Function('return globalThis.process')().getBuiltinModule('fs') };",
    /Cannot read properties of undefined/,
  ),
  javascript(
    'process.getBuiltinModule',
    "return { p: globalThis.process.getBuiltinModule('child_process').execSync('id') };",
    /Cannot read properties of undefined/,
  ),
  javascript(
    'prototype pollution to reach the host',
    "Object.prototype.polluted = 'yes'; return { p: ({}).constructor.constructor('return this')().process.env };",
    /Cannot read properties of undefined/,
  ),
  javascript('fetch to the loopback server', `return { r: fetch('${url}') };`, /fetch is not defined/),
  javascript('dynamic import', "return { m: import('node:fs') };", /import|not supported|Not supported/i),
  javascript('eval of process', "return { p: eval('process') };", /process is not defined/),
  javascript('WebAssembly', 'return { w: WebAssembly.compile(new Uint8Array(8)) };', /WebAssembly is not defined/),
  javascript('infinite loop', 'for (;;) {}', /time limit/),
  javascript('memory bomb', 'const a = []; for (;;) a.push(new Array(1e6).fill(1));', /memory|limit|disposed/i),
];

function javascriptScript(attacks: readonly Attack[]): string {
  return ['switch (body.attack) {', ...attacks.map((attack, index) => `  case ${index}: { ${attack.code} }`), '}', 'return body;'].join('\n');
}

beforeAll(async () => {
  server = createServer((_request, response) => response.end('reached'));
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  // the first import of urllib takes about a second on a quiet machine: the limit leaves room for a loaded one
  harness = await startExecutor(['loom.scripts.timeLimitMs=4000']);
});

afterAll(async () => {
  await harness.stop();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  delete process.env.LOOM_ADVERSARIAL_SECRET;
});

async function attackWorkflow(
  language: 'python' | 'javascript',
  attacks: readonly Attack[],
  uuid: string,
): Promise<{ name: string; script: string; failures: string; out: string; inlet: string }> {
  const inlet = `Attacks_${uuid}`;
  const script = `Script_${uuid}`;
  const out = `Out_${uuid}`;
  const failures = `Failures_${uuid}`;
  const source = language === 'python' ? pythonScript(attacks) : javascriptScript(attacks);
  const workflow = workflowOf(
    `Adversarial ${language}_${uuid}`,
    [
      instance(COMPONENT_KINDS.INLET, inlet),
      instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, script, { script: source, language, failure_handler: failures }),
      instance(COMPONENT_KINDS.LOGGER, out),
      instance(COMPONENT_KINDS.LOGGER, failures, { level: 'warn' }),
    ],
    [
      [inlet, script],
      [script, out],
    ],
  );
  const put = await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow) });
  const name = put.summary?.name ?? '';
  await call(harness.executor, 'startWorkflow', { name });
  return { name, script, failures, out, inlet };
}

describe.each([
  ['python', () => pythonAttacks({ url, strayFile: STRAY_FILE }), '7d3f1a2b-4c5d-4e6f-8a7b-9c0d1e2f3a4b'],
  ['javascript', JAVASCRIPT_ATTACKS, '8e4a2b3c-5d6e-4f7a-9b8c-0d1e2f3a4b5c'],
] as const)('%s scripts trying to escape', (language, attacksOf, uuid) => {
  it('fail each attempt with a clear error, into the failure handler, audited; the service stays healthy', async () => {
    const attacks = attacksOf();
    const { name, script, failures, out, inlet } = await attackWorkflow(language, attacks, uuid);
    for (const [index] of attacks.entries()) {
      await call(harness.executor, 'publishMessage', {
        workflowName: name,
        inlet,
        body: { attack: index },
        headers: {},
        messageId: `${language}-attack-${index}`,
      });
    }
    await call(harness.executor, 'publishMessage', { workflowName: name, inlet, body: { attack: -1, fine: true }, headers: {}, messageId: `${language}-fine` });

    const handled = () => harness.logged().filter((line) => line.component === failures);
    await expect.poll(() => handled().length, { timeout: 120_000, interval: 250 }).toBe(attacks.length);
    const errors = new Map(handled().map((line) => [(line.body as { messageId: string }).messageId, (line.body as { error: string }).error]));
    const outcomes = attacks.map((attack, index) => ({ attack: attack.name, error: errors.get(`${language}-attack-${index}`) }));
    for (const [index, attack] of attacks.entries()) {
      expect(outcomes[index], attack.name).toEqual({ attack: attack.name, error: expect.stringMatching(attack.error) });
    }

    // the harmless message still goes through: the component survived every attempt
    await expect.poll(() => harness.logged().some((line) => line.component === out && line.messageId === `${language}-fine`), { timeout: 30_000 }).toBe(true);
    const status = await call(harness.executor, 'getWorkflowStatus', { name });
    expect(status.state).toBe(WorkflowState.WORKFLOW_STATE_RUNNING);
    expect(status.components.find((component) => component.name === script)).toMatchObject({ messagesFailed: attacks.length });

    const failureEvents = () => componentFailureEvents(harness, name);
    await expect.poll(async () => (await failureEvents()).length, { timeout: 10_000 }).toBe(attacks.length);
    const audited = { events: await failureEvents() };
    expect(audited.events.every((event) => event.componentName === script && event.componentType === 'PROCESSOR')).toBe(true);

    await call(harness.executor, 'stopWorkflow', { name });
    expect(connections).toBe(0);
    expect(existsSync(STRAY_FILE)).toBe(false);
    expect(existsSync('/tmp/loom-adversarial-id')).toBe(false);
    expect(harness.logLines.join('\n')).not.toContain(SECRET);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  }, 180_000);
});

// loom's own state, by every route a script could take to it: relative, absolute, `..`, symbolic links (its
// own and one planted in the working directory), /proc/self/cwd and a listing of the directory holding it.
// Each state path gets a marker inside it (a file of its own, or for a file that loom has not written, the
// file itself); each attempt must fail, and no marker may show in any output or log line.

const TAG = `adv-${process.pid}`;
const MARKER = `loom-state-marker-${TAG}`;

interface StateTarget {
  readonly key: string;
  readonly path: string;
  readonly kind: 'file' | 'directory';
}

/** The state of one scenario: configuration overrides, the config file, the `<VAR>_FILE` variable, and the paths to try. */
function stateScenario(base: string | undefined): { overrides: string[]; configFile: string; env: NodeJS.ProcessEnv; targets: StateTarget[] } {
  const dir = base ?? process.cwd();
  const at = (name: string): string => join(dir, `${name}-${TAG}`);
  const configFile = join(dir, `loom-${TAG}.yaml`);
  const tokenFile = join(dir, `token-${TAG}.txt`);
  const common: StateTarget[] = [
    { key: '--config', path: configFile, kind: 'file' },
    { key: 'LOOM_ADVERSARIAL_TOKEN_FILE', path: tokenFile, kind: 'file' },
  ];
  const env = { LOOM_ADVERSARIAL_TOKEN_FILE: tokenFile };
  if (base === undefined) {
    // every state key at its default: inside ./.loom, the working directory here lying inside the installation directory
    const data = resolve('.loom');
    return {
      overrides: [],
      configFile,
      env,
      targets: [
        { key: 'loom.data.directory', path: data, kind: 'directory' },
        { key: 'loom.datasource.filesystemRoot', path: join(data, 'workflows'), kind: 'directory' },
        { key: 'loom.embedded.postgres.dataDir', path: join(data, 'pgdata'), kind: 'directory' },
        { key: 'loom.embedded.graph.dataDir', path: join(data, 'graphdata'), kind: 'directory' },
        { key: 'loom.secrets.keyRingFile', path: join(data, 'keyring.json'), kind: 'file' },
        { key: 'loom.security.audit.log.path', path: join(data, 'audit.log'), kind: 'file' },
        { key: 'loom.security.audit.log.path (rotated)', path: join(data, 'audit.log.000000000001'), kind: 'file' },
        { key: 'loom.scheduler.stateFile', path: join(data, 'scheduler-state.json'), kind: 'file' },
        ...common,
      ],
    };
  }
  const targets: StateTarget[] = [
    { key: 'loom.data.directory', path: at('data'), kind: 'directory' },
    { key: 'loom.datasource.filesystemRoot', path: at('workflows'), kind: 'directory' },
    { key: 'loom.startup.workflows.directory', path: at('startup'), kind: 'directory' },
    { key: 'loom.embedded.postgres.dataDir', path: at('pgdata'), kind: 'directory' },
    { key: 'loom.embedded.graph.dataDir', path: at('graphdata'), kind: 'directory' },
    { key: 'loom.secrets.keyRingFile', path: `${at('keyring')}.json`, kind: 'file' },
    { key: 'loom.security.audit.log.path', path: `${at('audit')}.log`, kind: 'file' },
    { key: 'loom.security.audit.log.path (rotated)', path: `${at('audit')}.log.000000000001`, kind: 'file' },
    { key: 'loom.scheduler.stateFile', path: `${at('scheduler')}.json`, kind: 'file' },
  ];
  const overrides = targets.filter((target) => !target.key.includes(' ')).map((target) => `${target.key}=${target.path}`);
  return { overrides, configFile, env, targets: [...targets, ...common] };
}

/** The routes to one state path, as Python expressions of the path to open or list. */
function routesTo(target: StateTarget, plantedLink: string): { route: string; code: string }[] {
  // inside a directory, the planted marker file; a file, itself
  const file = target.kind === 'directory' ? join(target.path, `marker-${TAG}.txt`) : target.path;
  const read = (expression: string): string => `import os\nreturn {'c': open(${expression}, 'rb').read().decode('latin-1')}`;
  const serviceCwd = relative(process.cwd(), file);
  return [
    { route: 'absolute', code: read(JSON.stringify(file)) },
    { route: 'relative', code: read(`os.path.relpath(${JSON.stringify(file)})`) },
    { route: '..', code: read(`'/'.join([os.getcwd()] + ['..'] * os.getcwd().count('/')) + ${JSON.stringify(file)}`) },
    {
      route: 'its own symbolic link',
      code: `import os\nos.symlink(${JSON.stringify(file)}, 'link-${TAG}')\n${read(`'link-${TAG}'`).replace('import os\n', '')}`,
    },
    { route: 'a symbolic link planted in the working directory', code: read(JSON.stringify(plantedLink)) },
    { route: '/proc/self/cwd', code: read(JSON.stringify(`/proc/self/cwd/${serviceCwd}`)) },
    { route: 'listing it', code: `import os\nreturn {'ls': os.listdir(${JSON.stringify(target.kind === 'directory' ? target.path : dirname(target.path))})}` },
    { route: 'listing the directory holding it', code: `import os\nreturn {'ls': os.listdir(${JSON.stringify(dirname(target.path))})}` },
  ];
}

describe.each([
  ['at the defaults', undefined],
  ['configured inside the working directory', process.cwd()],
  ['configured inside the installation directory', INSTALLATION_DIR],
] as const)("loom's state %s", (_scenario, base) => {
  const { overrides, configFile, env, targets } = stateScenario(base);
  const tried: { key: string; path: string; route: string; error: string }[] = [];
  const made: string[] = [];
  let stateHarness: ExecutorHarness;

  beforeAll(async () => {
    const hadData = existsSync(resolve('.loom'));
    if (base === undefined && !hadData) made.push(resolve('.loom'));
    // what this test makes, and removes afterwards: every state path not there before (loom makes some at start)
    made.push(...targets.filter((target) => !existsSync(target.path)).map((target) => target.path));
    writeFileSync(configFile, `# ${MARKER}\nloom:\n  scripts:\n    timeLimitMs: 4000\n`);
    stateHarness = await startExecutor([], { overrides, configFile, env });
    for (const target of targets) {
      if (target.kind === 'directory') {
        mkdirSync(target.path, { recursive: true });
        writeFileSync(join(target.path, `marker-${TAG}.txt`), MARKER);
      } else if (!existsSync(target.path)) {
        writeFileSync(target.path, MARKER);
      }
    }
    made.push(...targets.map((_target, index) => join(process.cwd(), `planted-${TAG}-${index}`)));
  }, 60_000);

  afterAll(async () => {
    await stateHarness.stop();
    for (const path of made) rmSync(path, { recursive: true, force: true });
    // the suite names every state path it tried, the routes, and what refused them
    const lines = targets.map((target) => {
      const attempts = tried.filter((entry) => entry.path === target.path);
      const refusals = [...new Set(attempts.map((entry) => entry.error.replace(/'[^']*'|\/\S+/g, '…').slice(0, 60)))];
      return `  ${target.key} ${target.path}: ${attempts.length} routes (${attempts.map((entry) => entry.route).join(', ')}) refused: ${refusals.join(' / ')}`;
    });
    console.log(`loom's state ${_scenario}, ${tried.length} attempts:\n${lines.join('\n')}`);
  });

  it('no script reads or lists any of it, by any route', async () => {
    const attacks: { key: string; path: string; route: string; code: string }[] = [];
    for (const [index, target] of targets.entries()) {
      const planted = join(process.cwd(), `planted-${TAG}-${index}`);
      symlinkSync(target.kind === 'directory' ? join(target.path, `marker-${TAG}.txt`) : target.path, planted);
      attacks.push(...routesTo(target, planted).map((route) => ({ key: target.key, path: target.path, ...route })));
    }
    const harnessBefore = harness;
    harness = stateHarness;
    try {
      const { name, failures, out, inlet } = await attackWorkflow(
        'python',
        attacks.map((attack) => python(`${attack.key} ${attack.route}`, attack.code)),
        '9f5b3c4d-6e7f-4a8b-9c0d-1e2f3a4b5c6d',
      );
      for (const [index] of attacks.entries()) {
        await call(stateHarness.executor, 'publishMessage', { workflowName: name, inlet, body: { attack: index }, headers: {}, messageId: `state-${index}` });
      }
      await call(stateHarness.executor, 'publishMessage', { workflowName: name, inlet, body: { attack: -1 }, headers: {}, messageId: 'state-fine' });
      await expect.poll(() => stateHarness.logged().some((line) => line.component === out && line.messageId === 'state-fine'), { timeout: 60_000 }).toBe(true);
      const errors = new Map(
        stateHarness
          .logged()
          .filter((line) => line.component === failures)
          .map((line) => [(line.body as { messageId: string }).messageId, (line.body as { error: string }).error]),
      );
      for (const [index, attack] of attacks.entries()) {
        const error = errors.get(`state-${index}`) ?? 'NOT REFUSED: the script got an answer';
        tried.push({ key: attack.key, path: attack.path, route: attack.route, error: error.slice(0, 160) });
      }
      const leaked = tried.filter((entry) => entry.error.startsWith('NOT REFUSED'));
      expect(leaked, 'every attempt fails its message').toEqual([]);
      expect(stateHarness.logLines.filter((line) => line.includes(MARKER))).toEqual([]);
      await call(stateHarness.executor, 'stopWorkflow', { name });
    } finally {
      harness = harnessBefore;
    }
  }, 180_000);
});

describe('a state path that holds what a script host must read', () => {
  it('fails the Python workflow at start with FAILED_PRECONDITION naming the path and the key', async () => {
    // the graph's data directory over node_modules (never made: no graph is used), which holds the interpreter
    const graphDir = join(INSTALLATION_DIR, 'node_modules');
    const badHarness = await startExecutor([`loom.embedded.graph.dataDir=${graphDir}`]);
    const harnessBefore = harness;
    harness = badHarness;
    try {
      const failed = await attackWorkflow('python', [python('nothing', 'return body')], '0a6c4d5e-7f8a-4b9c-8d0e-2f3a4b5c6d7e').then(
        () => undefined,
        (error: unknown) => error as { code: number; details: string },
      );
      expect(failed?.code).toBe(status.FAILED_PRECONDITION);
      expect(failed?.details).toContain('loom.embedded.graph.dataDir');
      expect(failed?.details).toContain(graphDir);
    } finally {
      harness = harnessBefore;
      await badHarness.stop();
    }
  }, 60_000);
});

describe.each([
  ['inside the working directory', process.cwd()],
  ['inside the installation directory', INSTALLATION_DIR],
] as const)('TLS and identity provider files configured %s', (_where, base) => {
  // these keys change how the server itself listens and signs in, so they are tried on the script host alone
  const files = {
    'loom.tls.keyFile': join(base, `tls-key-${TAG}.pem`),
    'loom.tls.certFile': join(base, `tls-cert-${TAG}.pem`),
    'loom.tls.caFile': join(base, `tls-ca-${TAG}.pem`),
    'loom.auth.oidc.configFile': join(base, `oidc-${TAG}.json`),
    'loom.graph.sso.providerConfigFile': join(base, `sso-${TAG}.json`),
  };
  const targets: StateTarget[] = Object.entries(files).map(([key, path]) => ({ key, path, kind: 'file' }));
  const planted = targets.map((_target, index) => join(process.cwd(), `planted-tls-${TAG}-${index}`));
  const privateDir = mkdtempSync(join(tmpdir(), 'loom-workflow-'));
  let processor: Processor | undefined;

  afterAll(async () => {
    await processor?.close();
    for (const path of [...targets.map((target) => target.path), ...planted, privateDir]) rmSync(path, { recursive: true, force: true });
  });

  it('no script reads or lists them, by any route', async () => {
    for (const [index, target] of targets.entries()) {
      writeFileSync(target.path, MARKER);
      symlinkSync(target.path, planted[index] as string);
    }
    const config = loadConfig({
      env: {},
      overrides: [...Object.entries(files).map(([key, path]) => `${key}=${path}`), 'loom.graph.sso.uri=neo4j://127.0.0.1:7687', 'loom.graph.sso.mode=bearer'],
    });
    const attacks = targets.flatMap((target, index) =>
      routesTo(target, planted[index] as string).map((route) => ({ key: target.key, path: target.path, ...route })),
    );
    const script = pythonScript(attacks.map((attack) => python(attack.route, attack.code)));
    const component = instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, 'tls attacks', { script, language: 'python' });
    const logger = createLogger({ level: 'silent' });
    const context: ComponentContext = {
      name: 'tls attacks',
      instance: component,
      options: optionsOf(component),
      resource: undefined,
      workflowName: 'tls',
      logger,
      signal: new AbortController().signal,
      dryRun: false,
      privateDirectory: () => privateDir,
      fail: (error) => {
        // processors throw ComponentFailedError rather than calling fail
        throw error;
      },
    };
    processor = await createPythonProcessor(context, 'transformer', { memoryLimitMb: 256, timeoutMs: 4000 }, pythonSandbox(true, statePaths(config)));
    const outcomes = await processor.process(
      attacks.map((_attack, index) => ({ id: `tls-${index}`, body: { attack: index }, headers: {} })),
      new AbortController().signal,
    );
    const tried = attacks.map((attack, index) => ({ key: attack.key, route: attack.route, outcome: outcomes[index] }));
    console.log(
      `TLS and identity provider files ${_where}, ${tried.length} attempts:\n${targets
        .map(
          (target) =>
            `  ${target.key} ${target.path}: ${tried
              .filter((entry) => entry.key === target.key)
              .map((entry) => entry.route)
              .join(', ')}`,
        )
        .join('\n')}`,
    );
    expect(tried.filter((entry) => entry.outcome?.ok !== false)).toEqual([]);
    expect(JSON.stringify(outcomes)).not.toContain(MARKER);
  }, 120_000);
});
