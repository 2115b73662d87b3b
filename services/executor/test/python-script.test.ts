import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { COMPONENT_KINDS, type ErrorKind } from '@loom/domain';
import { createLogger } from '@loom/telemetry';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { inletFactory } from '../src/components/inlet.js';
import {
  type ComponentContext,
  ComponentFailedError,
  type ComponentFactory,
  type LoomMessage,
  type Outcome,
  type Processor,
} from '../src/runtime/component.js';
import { ScriptCompileError } from '../src/scripts/javascript.js';
import { createPythonProcessor, type PythonLimits } from '../src/scripts/python.js';
import { INSTALLATION_DIR, outermost, pythonSandbox } from '../src/scripts/sandbox.js';
import { WorkflowRun } from '../src/runtime/workflow-run.js';
import { scriptContext } from './component-context.js';
import { captureSink, instance as instanceOf, workflowOf } from './workflows.js';

// each test starts one to three interpreters; on a shared machine under load (measured here: load 15 on
// 2 cores) one start takes 10 s or more, so the file's tests get more than vitest's default 30 s
vi.setConfig({ testTimeout: 120_000 });

const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_chunk, _encoding, done) => done() }) });
// the workflow's private temp directory, as a run would make it
const privateDir = mkdtempSync(join(tmpdir(), 'loom-workflow-'));
afterAll(() => rmSync(privateDir, { recursive: true, force: true }));
const LIMITS: PythonLimits = { memoryLimitMb: 256, timeoutMs: 2_000 };

function contextFor(script: string, role: 'transformer' | 'filter'): ComponentContext {
  return scriptContext(script, role, 'python', { privateDirectory: privateDir }).context;
}

const processors: Processor[] = [];
afterEach(async () => {
  for (const processor of processors.splice(0)) await processor.close();
});

async function processorFor(script: string, role: 'transformer' | 'filter' = 'transformer', limits = LIMITS, policy = true): Promise<Processor> {
  const processor = await createPythonProcessor(contextFor(script, role), role, limits, pythonSandbox(policy));
  processors.push(processor);
  return processor;
}

const message = (body: Record<string, unknown>, id: string): LoomMessage => ({ id, body, headers: { source: 'test' } });
const run = (processor: Processor, ...bodies: Record<string, unknown>[]): Promise<readonly Outcome[]> =>
  processor.process(
    bodies.map((body, i) => message(body, `m${i}`)),
    new AbortController().signal,
  );
/** A script's failed outcome: its cause a ScriptError of this kind. */
const failed = (error: RegExp, kind: ErrorKind = 'invalid-argument'): unknown => ({
  ok: false,
  error: expect.stringMatching(error),
  transient: false,
  cause: expect.objectContaining({ name: 'ScriptError', kind }),
});

// a configuration file under the installation directory, which the policy lets scripts read
const configDir = join(INSTALLATION_DIR, '.loom-test-python');
mkdirSync(configDir, { recursive: true });
writeFileSync(join(configDir, 'settings.json'), '{"greeting": "hello"}');
afterAll(() => rmSync(configDir, { recursive: true, force: true }));

/**
 * Scripts of the tests below that need no interpreter of their own (none ends or replaces its host, nor sets a limit of
 * its own): they run as the cases of one script, on one host under the policy started for the first of them, as a
 * workflow's messages share their component's interpreter. A host start is about 2 CPU-seconds, most of this file's.
 */
const CASES = {
  stdlib: [
    'import re, json, datetime',
    "text = re.sub(r'\\s+', ' ', body['text']).strip()",
    "day = datetime.date.fromisoformat(body['date']).strftime('%A')",
    "return {**body, 'text': text, 'day': day, 'echo': json.loads(json.dumps({'n': body['n']}))}",
  ].join('\n'),
  noneForOdd: "if body['n'] % 2:\n    return None\nreturn body",
  wrongType: "return 'text'",
  inverse: "return {'inverse': 1 / body['n']}",
  configFile: `import json\nwith open('${configDir}/settings.json') as f:\n    return {**body, **json.load(f)}`,
  privateFiles:
    "import os\nwith open('notes.txt', 'w') as f:\n    f.write(body['text'])\nwith open(os.path.join(os.getcwd(), 'notes.txt')) as f:\n    return {'read': f.read(), 'cwd': os.getcwd()}",
};

/** The one script of CASES: each case's script is the body of a branch on the message's `case`, which it takes out of body. */
function casesScript(): string {
  return [
    "case = body.pop('case')",
    ...Object.entries(CASES).flatMap(([name, script]) => [`if case == '${name}':`, ...script.split('\n').map((line) => `    ${line}`)]),
    "raise ValueError('no case ' + case)",
  ].join('\n');
}

let casesHost: Promise<Processor> | undefined;

/** Ends the host of CASES, when one was started (it writes to privateDir, which the life cycle test finds no host writing to). */
async function closeCasesHost(): Promise<void> {
  await (await casesHost?.catch(() => undefined))?.close();
}

/** Runs the bodies through the script of CASES named `name`, on the host the cases share. */
async function runCase(name: keyof typeof CASES, ...bodies: Record<string, unknown>[]): Promise<readonly Outcome[]> {
  casesHost ??= createPythonProcessor(contextFor(casesScript(), 'transformer'), 'transformer', LIMITS, pythonSandbox(true));
  return run(await casesHost, ...bodies.map((body) => ({ case: name, ...body })));
}

describe('Python transformer and filter', () => {
  afterAll(closeCasesHost);

  it('transforms with the standard library (re, json, datetime): the script is the body of a function of body', async () => {
    const [result] = await runCase('stdlib', { text: '  many   spaces\there ', date: '2026-11-21', n: 3 });
    expect(result).toEqual({
      ok: true,
      outputs: [{ id: 'm0', headers: { source: 'test' }, body: { text: 'many spaces here', date: '2026-11-21', n: 3, day: 'Saturday', echo: { n: 3 } } }],
    });
  });

  it('answers no output for None, keeps or drops with a filter, and names a wrong return type', async () => {
    expect((await runCase('noneForOdd', { n: 1 }, { n: 2 })).map((o) => (o.ok ? o.outputs.length : -1))).toEqual([0, 1]);
    const filter = await processorFor("return body['n'] > 1", 'filter');
    expect((await run(filter, { n: 1 }, { n: 2 })).map((o) => (o.ok ? o.outputs.length : -1))).toEqual([0, 1]);
    expect(await runCase('wrongType', { n: 1 })).toEqual([failed(/^a transformer must return a dict \(the new message\) or None, not str$/)]);
  });

  it('fails one message with its exception and goes on with the rest', async () => {
    const outcomes = await runCase('inverse', { n: 2 }, { n: 0 }, { n: 4 });
    expect(outcomes[1]).toEqual(failed(/^ZeroDivisionError: division by zero$/));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(2);
  });

  it('refuses a script that does not compile, naming the component', async () => {
    const creating = createPythonProcessor(contextFor('return (', 'transformer'), 'transformer', LIMITS, pythonSandbox(true));
    await expect(creating).rejects.toBeInstanceOf(ScriptCompileError);
    await expect(creating).rejects.toThrow(/python_transformer\.options\.script: the Python script does not compile/);
  });

  it('under the policy reads a configuration file under the installation directory', async () => {
    expect(await runCase('configFile', { n: 1 })).toEqual([{ ok: true, outputs: [expect.objectContaining({ body: { n: 1, greeting: 'hello' } })] }]);
  });

  it("under the policy writes and reads back files in the workflow's private temp directory, its working directory", async () => {
    expect(await runCase('privateFiles', { text: 'kept' })).toEqual([
      { ok: true, outputs: [expect.objectContaining({ body: { read: 'kept', cwd: privateDir } })] },
    ]);
    expect(readFileSync(join(privateDir, 'notes.txt'), 'utf8')).toBe('kept');
  });

  it('fails a message over the time limit alone, and the next message runs on a fresh interpreter', async () => {
    const processor = await processorFor("if body['loop']:\n    while True:\n        pass\nreturn body", 'transformer', { memoryLimitMb: 256, timeoutMs: 500 });
    const outcomes = await run(processor, { loop: false, n: 1 }, { loop: true }, { loop: false, n: 3 });
    expect(outcomes[1]).toEqual(failed(/^the script ran longer than the time limit of 500 ms$/, 'deadline-exceeded'));
    expect([outcomes[0]?.ok, outcomes[2]?.ok]).toEqual([true, true]);
  });

  it('turns memory bombs into MemoryError and deep recursion into RecursionError, and keeps running', async () => {
    // the limit of interest is memory: the time limit is far off, so a machine slowed by other work still sees
    // MemoryError (seen at load 17 with 2 s: the list bomb ran into the time limit first)
    const processor = await processorFor(
      "kind = body['kind']\nif kind == 'bytes':\n    return {'n': len(bytearray(2_000_000_000))}\nif kind == 'list':\n    x = []\n    while True:\n        x.append('y' * 1_000_000)\nif kind == 'recursion':\n    import sys\n    sys.setrecursionlimit(10**6)\n    def f(n):\n        return f(n + 1)\n    return {'n': f(0)}\nreturn body",
      'transformer',
      { ...LIMITS, timeoutMs: 60_000 },
    );
    const outcomes = await run(processor, { kind: 'bytes' }, { kind: 'list' }, { kind: 'recursion' }, { kind: 'fine' });
    expect(outcomes.slice(0, 3)).toEqual([failed(/^MemoryError/), failed(/^MemoryError/), failed(/^RecursionError/)]);
    expect(outcomes[3]).toEqual({ ok: true, outputs: [expect.objectContaining({ body: { kind: 'fine' } })] });
  });

  it('with the policy off keeps the network block: a process the script starts reaches no loopback server', async () => {
    let connections = 0;
    const server = createServer((_request, response) => response.end('reached'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const reach = `require('http').get('http://127.0.0.1:${port}/', () => process.exit(0)).on('error', () => process.exit(3))`;
      const processor = await processorFor(
        `import js\nreturn {'status': js.eval(${JSON.stringify(`process.getBuiltinModule('child_process').spawnSync(process.execPath, ['-e', ${JSON.stringify(reach)}]).status`)})}`,
        'transformer',
        LIMITS,
        false,
      );
      const [result] = await run(processor, {});
      // policy off: the script may start processes, but they share its empty network namespace
      expect(result).toEqual({ ok: true, outputs: [expect.objectContaining({ body: { status: 3 } })] });
      expect(connections).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('script host environment', () => {
  it("with the policy off still starts the host with none of the service's environment variables", async () => {
    const secret = 'loom-policy-off-secret-3b9d41c7';
    process.env.LOOM_SECRETS_KEYS_POLICYOFF = secret;
    try {
      // policy off, the script reaches the host's JavaScript side and its process.env
      const processor = await processorFor("import js, json\nreturn {'env': json.loads(js.eval('JSON.stringify(process.env)'))}", 'transformer', LIMITS, false);
      const [result] = await run(processor, {});
      expect(result).toEqual({ ok: true, outputs: [expect.objectContaining({ body: { env: expect.any(Object) } })] });
      const env = (result as unknown as { outputs: { body: { env: Record<string, string> } }[] }).outputs[0]?.body.env ?? {};
      expect(Object.keys(env).filter((name) => name.startsWith('LOOM_'))).toEqual([]);
      expect(JSON.stringify(env)).not.toContain(secret);
      expect(Object.keys(env).sort()).toEqual(expect.arrayContaining(['LANG']));
    } finally {
      delete process.env.LOOM_SECRETS_KEYS_POLICYOFF;
    }
  });
});

describe('script host protocol', () => {
  it('replaces a host that writes something else than answers (policy off: the script reaches its own descriptors), failing only that message', async () => {
    const processor = await processorFor(
      "if body.get('forge'):\n    import js\n    js.eval(\"process.getBuiltinModule('fs').writeSync(3, 'not json\\\\n')\")\n    while True:\n        pass\nreturn body",
      'transformer',
      { memoryLimitMb: 256, timeoutMs: 2_000 },
      false,
    );
    const outcomes = await run(processor, { forge: true }, { n: 2 });
    expect(outcomes[0]).toEqual(failed(/the script host broke its protocol/, 'unavailable'));
    expect(outcomes[1]).toEqual({ ok: true, outputs: [expect.objectContaining({ body: { n: 2 } })] });
  });
});

/** Script host processes (and their unshare parents) still alive with write access to `dir`. */
function hostsWriting(dir: string): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(`--allow-fs-write=${dir}`);
      } catch {
        return false; // the process ended between the listing and the read
      }
    });
}

describe('script host life cycle', () => {
  it('ends a host that finishes starting after the component was closed, and fails the waiting batch with ComponentFailedError', async () => {
    const processor = await processorFor("if body['loop']:\n    while True:\n        pass\nreturn body", 'transformer', { memoryLimitMb: 256, timeoutMs: 500 });
    expect(await run(processor, { loop: true })).toEqual([failed(/time limit/, 'deadline-exceeded')]);
    // the next batch needs a new host; the component closes while that host is starting
    const pending = run(processor, { loop: false });
    await processor.close();
    await expect(pending).rejects.toThrow(ComponentFailedError);
    await expect.poll(() => hostsWriting(privateDir), { timeout: 10_000 }).toEqual([]);
  });
});

describe('Python component with concurrency above 1 (workers share one script host)', () => {
  /** inlet → Python transformer (concurrency 4, small batches so the workers overlap) → a sink that records; 1,000 messages published. */
  async function runConcurrently(script: string, timeoutMs: number): Promise<{ received: LoomMessage[]; failures: { id: string; error: string }[] }> {
    const sink = captureSink();
    const failures: { id: string; error: string }[] = [];
    const python: ComponentFactory = {
      kind: 'processor',
      create: (context) => createPythonProcessor(context, 'transformer', { memoryLimitMb: 256, timeoutMs }, pythonSandbox(true)),
    };
    const workflow = workflowOf(
      'concurrent python',
      [
        instanceOf(COMPONENT_KINDS.INLET, 'in'),
        instanceOf(COMPONENT_KINDS.MESSAGE_TRANSFORMER, 'square', { script, language: 'python', concurrency: 4 }),
        instanceOf(COMPONENT_KINDS.LOGGER, 'out'),
      ],
      [
        ['in', 'square'],
        ['square', 'out'],
      ],
    );
    const run = await WorkflowRun.start(workflow, {
      factories: new Map([
        [COMPONENT_KINDS.INLET, inletFactory],
        [COMPONENT_KINDS.MESSAGE_TRANSFORMER, python],
        [COMPONENT_KINDS.LOGGER, sink.factory],
      ]),
      logger,
      maxBatch: 7,
      onFailure: (failure, failed) => void (failure.component === 'square' && failures.push({ id: failed.id, error: failure.message })),
    });
    const withdrawal = new AbortController();
    await Promise.all(Array.from({ length: 1000 }, (_, n) => run.publish('in', message({ n, tag: `t${(n * 7919) % 1000}` }, `m${n}`), withdrawal)));
    // stop drains: every message is answered before it resolves
    expect(await run.stop(120_000)).toBe(true);
    return { received: sink.received, failures };
  }

  it('answers each of 1,000 messages with its own result (answers matched by request id)', async () => {
    const { received, failures } = await runConcurrently("return {'n': body['n'], 'square': body['n'] * body['n'], 'tag': body['tag']}", 10_000);
    expect(failures).toEqual([]);
    expect(received).toHaveLength(1000);
    for (const output of received) {
      const n = Number(output.id.slice(1));
      expect(output.body).toEqual({ n, square: n * n, tag: `t${(n * 7919) % 1000}` });
    }
    expect(new Set(received.map((output) => output.id)).size).toBe(1000);
  });

  it('blames only the message over its time limit; the messages of the other workers go on to a new host with their own answers', async () => {
    const { received, failures } = await runConcurrently(
      "if body['n'] == 337:\n    while True:\n        pass\nreturn {'n': body['n'], 'tag': body['tag']}",
      1_000,
    );
    expect(failures).toEqual([{ id: 'm337', error: 'the script ran longer than the time limit of 1000 ms' }]);
    expect(received).toHaveLength(999);
    for (const output of received) {
      const n = Number(output.id.slice(1));
      expect(output.body).toEqual({ n, tag: `t${(n * 7919) % 1000}` });
    }
  });
});

describe('script host grants', () => {
  it('passes each granted path once, leaving out those below another (Node 20 aborts on some overlaps)', () => {
    expect(outermost(['/work/app', '/tmp', '/tmp/loom-script-1', '/work/app', '/work/app/node_modules/pyodide', '/work/application'])).toEqual([
      '/tmp',
      '/work/app',
      '/work/application',
    ]);
  });
});
