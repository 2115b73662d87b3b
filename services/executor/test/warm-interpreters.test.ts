import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Readable, Writable } from 'node:stream';
import { createLogger } from '@loom/telemetry';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { type LoomMessage, type Outcome, type Processor } from '../src/runtime/component.js';
import { createPythonProcessor, type PythonLimits } from '../src/scripts/python.js';
import { pythonSandbox, sandboxCommand } from '../src/scripts/sandbox.js';
import { WarmInterpreters } from '../src/scripts/warm-interpreters.js';
import { scriptContext } from './component-context.js';
import { pythonAttacks, pythonScript } from './python-attacks.js';

// each test makes one or two interpreters from scratch (the warm ones); on a loaded machine that takes seconds each
vi.setConfig({ testTimeout: 120_000 });

const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_chunk, _encoding, done) => done() }) });
const privateDir = mkdtempSync(join(tmpdir(), 'loom-workflow-'));
afterAll(() => rmSync(privateDir, { recursive: true, force: true }));
// a time limit with room for a first import (urllib's takes seconds on a loaded machine)
const LIMITS: PythonLimits = { memoryLimitMb: 256, timeoutMs: 8_000 };

const pools: WarmInterpreters[] = [];
const processors: Processor[] = [];
afterEach(async () => {
  for (const processor of processors.splice(0)) await processor.close();
  for (const pool of pools.splice(0)) await pool.close();
});

function poolOf(count: number, memoryLimitMb = 256): WarmInterpreters {
  const pool = new WarmInterpreters({ count, memoryLimitMb, sandbox: () => pythonSandbox(true), logger });
  pools.push(pool);
  return pool;
}

async function processorFor(script: string, warm: WarmInterpreters): Promise<Processor> {
  const { context } = scriptContext(script, 'transformer', 'python', { privateDirectory: privateDir });
  const processor = await createPythonProcessor(context, 'transformer', LIMITS, pythonSandbox(true), warm);
  processors.push(processor);
  return processor;
}

const run = (processor: Processor, body: Record<string, unknown>): Promise<readonly Outcome[]> =>
  processor.process([{ id: 'm1', body, headers: {} } satisfies LoomMessage], new AbortController().signal);

/** The body of a message's one output. */
function bodyOf(outcomes: readonly Outcome[]): Record<string, unknown> {
  const [first] = outcomes;
  if (first?.ok !== true) throw new Error(`the message failed: ${JSON.stringify(first)}`);
  return first.outputs[0]?.body ?? {};
}

/** Processes below this one that make warm interpreters (script hosts at a low priority) and are still alive. */
function makers(): string[] {
  const entry = join(import.meta.dirname, '../script-host/python-host.mjs');
  const parents = new Map<string, { parent: string; nice: number }>();
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      // after the command's closing parenthesis: state, ppid, ... nice is the 17th field
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      parents.set(pid, { parent: fields[1] ?? '', nice: Number(fields[16]) });
    } catch {
      // the process ended between the listing and the read
    }
  }
  const below = (pid: string): boolean => {
    for (let at = parents.get(pid)?.parent; at !== undefined; at = parents.get(at)?.parent) if (at === String(process.pid)) return true;
    return false;
  };
  return [...parents].flatMap(([pid, { nice }]) => {
    try {
      return nice > 0 && below(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(entry) ? [pid] : [];
    } catch {
      return [];
    }
  });
}

// what a script learns of its interpreter: values a fresh start draws at random, and whether anything is left over
const PROBE = [
  'import random, sys',
  "return {'hash': hash('loom warm interpreter'), 'random': random.random(), 'leftover': 'left_by_a_script' in dir(sys.modules['builtins'])}",
].join('\n');

describe('warm Python interpreters', () => {
  it('start hosts that each have an interpreter of their own', async () => {
    const pool = poolOf(2);
    pool.fill();
    await pool.whenFilled();
    expect(pool.available).toBe(2);

    // the first host leaves something behind in its interpreter; the second must not see it
    const first = await processorFor(`import builtins\nbuiltins.left_by_a_script = 1\n${PROBE}`, pool);
    const second = await processorFor(PROBE, pool);
    expect(pool.taken).toBe(2);
    const [one, two] = [bodyOf(await run(first, {})), bodyOf(await run(second, {}))];
    expect(one.leftover).toBe(true);
    expect(two.leftover).toBe(false);
    // a snapshot freezes the hash seed and the random generator it was made with: each is given to one host only
    expect(one.hash).not.toEqual(two.hash);
    expect(one.random).not.toEqual(two.random);
  });

  it('refuses every Python attack of the adversarial suite on a host started from a warm interpreter', async () => {
    let connections = 0;
    const server = createServer((_request, response) => response.end('reached'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const strayFile = join(tmpdir(), `loom-warm-adversarial-${process.pid}.txt`);
    try {
      const attacks = pythonAttacks({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, strayFile });
      const pool = poolOf(1);
      pool.fill();
      await pool.whenFilled();
      const processor = await processorFor(pythonScript(attacks), pool);
      expect(pool.taken).toBe(1);
      for (const [index, attack] of attacks.entries()) {
        const outcomes = await run(processor, { attack: index });
        expect({ attack: attack.name, outcome: outcomes[0] }).toEqual({
          attack: attack.name,
          outcome: expect.objectContaining({ ok: false, error: expect.stringMatching(attack.error) }),
        });
      }
      expect(bodyOf(await run(processor, { attack: -1, fine: true }))).toEqual({ attack: -1, fine: true });
      expect(connections).toBe(0);
      expect(existsSync(strayFile)).toBe(false);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a host refuses a snapshot shorter or longer than its setup announces, before Pyodide starts', async () => {
    const command = sandboxCommand(pythonSandbox(true), { memoryLimitMb: 256, privateDir });
    for (const sent of [512, 2048]) {
      const host = spawn(command.file, command.args, { env: command.env, cwd: privateDir, stdio: ['pipe', 'ignore', 'pipe', 'pipe', 'pipe'] });
      let [stderr, answers] = ['', ''];
      // the host exits with the longer snapshot unread: its streams then end in ECONNRESET or EPIPE, which is expected
      for (const stream of host.stdio) stream?.on('error', () => undefined);
      host.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      (host.stdio[3] as Readable).on('data', (chunk: Buffer) => (answers += chunk.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => host.on('close', resolve));
      const setup = {
        script: 'return body',
        role: 'transformer',
        policy: true,
        pyodideDir: command.pyodideDir,
        readGrants: command.readGrants,
        mounts: command.mounts,
        split: command.split,
        writeGrant: privateDir,
        flushMs: 100,
        snapshot: true,
        snapshotBytes: 1024,
      };
      host.stdin?.write(`${JSON.stringify(setup)}\n`);
      (host.stdio[4] as Writable).end(Buffer.alloc(sent));
      expect({ sent, exit: await exited, answers }).toEqual({ sent, exit: 1, answers: '' });
      expect(stderr).toContain('script host protocol: the snapshot is not 1024 bytes long');
    }
  });

  it('makes none where an interpreter does not fit its memory limit, and says so once', async () => {
    // 1 MB cannot hold the interpreter: the maker fails, and the pool stops trying until a host takes from it
    const pool = poolOf(1, 1);
    pool.fill();
    await pool.whenFilled();
    expect(pool.available).toBe(0);
    expect(makers()).toEqual([]);
  });

  it('ends the makers still running when closed, and closes once', async () => {
    const pool = poolOf(2);
    pool.fill();
    await pool.close();
    await pool.close();
    await expect.poll(() => makers(), { timeout: 10_000 }).toEqual([]);
    expect(pool.take()).toBeUndefined();
    expect(pool.available).toBe(0);
  });
});
