import { type ErrorKind } from '@loom/domain';
import { afterEach, describe, expect, it } from 'vitest';
import { type ComponentContext, type LoomMessage, type Outcome, type Processor } from '../src/runtime/component.js';
import { type BuiltContext, scriptContext } from './component-context.js';
import {
  createJavaScriptProcessor,
  DEFAULT_SCRIPT_LIMITS,
  DEFAULT_SYNCHRONOUS_CALLS,
  ScriptCompileError,
  type ScriptLimits,
  type SynchronousCalls,
} from '../src/scripts/javascript.js';

// every context the tests made, so a test can read what its components logged
const contexts: BuiltContext[] = [];
const logged = (): string => contexts.flatMap((built) => built.raw).join('');

function contextFor(script: string, role: 'transformer' | 'filter', name = 'script_3f6c2a4e'): ComponentContext {
  const built = scriptContext(script, role, 'javascript', { name });
  contexts.push(built);
  return built.context;
}

const processors: Processor[] = [];
afterEach(async () => {
  for (const processor of processors.splice(0)) await processor.close();
  contexts.splice(0);
});

async function processorFor(script: string, role: 'transformer' | 'filter' = 'transformer', limits: ScriptLimits = DEFAULT_SCRIPT_LIMITS): Promise<Processor> {
  const processor = await createJavaScriptProcessor(contextFor(script, role), role, limits);
  processors.push(processor);
  return processor;
}

const message = (body: Record<string, unknown>, id = 'm1'): LoomMessage => ({ id, body, headers: { source: 'test' } });
const run = (processor: Processor, ...bodies: Record<string, unknown>[]): Promise<readonly Outcome[]> =>
  processor.process(
    bodies.map((body, i) => message(body, `m${i}`)),
    new AbortController().signal,
  );
/** A script's failed outcome: its cause a ScriptError of this kind. */
const failed = (error: string | RegExp, kind: ErrorKind = 'invalid-argument'): unknown => ({
  ok: false,
  error: typeof error === 'string' ? error : expect.stringMatching(error),
  transient: false,
  cause: expect.objectContaining({ name: 'ScriptError', kind }),
});
const timeLimit = (ms: number): unknown => failed(`script exceeded its time limit of ${ms} ms`, 'deadline-exceeded');
// a limit that cuts endless loops short yet leaves a trivial message room for a loaded machine's stalls
const QUICK: ScriptLimits = { memoryLimitMb: 32, timeoutMs: 500 };

describe('JavaScript transformer', () => {
  it('maps each body to the object the script returns, keeping id and headers', async () => {
    const processor = await processorFor('return { ...body, total: body.a + body.b, seen: true };');
    const outcomes = await processor.process([message({ a: 1, b: 2 }, 'first')], new AbortController().signal);
    expect(outcomes).toStrictEqual([{ ok: true, outputs: [{ id: 'first', headers: { source: 'test' }, body: { a: 1, b: 2, total: 3, seen: true } }] }]);
  });

  it('emits nothing when the script returns undefined or null', async () => {
    const processor = await processorFor('if (body.keep) return body; if (body.nil) return null;');
    expect(await run(processor, { keep: false }, { nil: true }, { keep: true })).toStrictEqual([
      { ok: true, outputs: [] },
      { ok: true, outputs: [] },
      { ok: true, outputs: [message({ keep: true }, 'm2')] },
    ]);
  });

  it('answers 500 outcomes in order for a batch of 500 messages', async () => {
    const processor = await processorFor('return { n: body.n * 2 };');
    const bodies = Array.from({ length: 500 }, (_, n) => ({ n }));
    const outcomes = await run(processor, ...bodies);
    expect(outcomes).toHaveLength(500);
    outcomes.forEach((result, n) => expect(result).toStrictEqual({ ok: true, outputs: [{ id: `m${n}`, headers: { source: 'test' }, body: { n: n * 2 } }] }));
  });

  it('serialises results as JSON does: deep nesting kept, undefined properties left out, dates as text', async () => {
    const processor = await processorFor(
      'let deep = { leaf: true }; for (let i = 0; i < 50; i++) deep = { deep }; return { deep, gone: undefined, at: new Date(0) };',
    );
    const [result] = await run(processor, {});
    let expected: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 50; i++) expected = { deep: expected };
    expect(result).toStrictEqual({ ok: true, outputs: [message({ deep: expected, at: '1970-01-01T00:00:00.000Z' }, 'm0')] });
  });

  it('fails a result that is not an object, naming the type it got', async () => {
    const processor = await processorFor('return body.promise ? Promise.resolve({}) : body.value;');
    expect(await run(processor, { value: 42 }, { value: 'text' }, { value: [1, 2] }, { value: true }, { promise: true })).toStrictEqual([
      failed('a transformer script must return an object (or nothing), got number'),
      failed('a transformer script must return an object (or nothing), got string'),
      failed('a transformer script must return an object (or nothing), got array'),
      failed('a transformer script must return an object (or nothing), got boolean'),
      failed('a transformer script must return an object (or nothing), got a promise: scripts run synchronously'),
    ]);
  });

  it('fails a result that is not JSON-serialisable: a function, a cycle, a BigInt', async () => {
    const processor = await processorFor(`
      if (body.kind === 'function') return { f: () => 1 };
      if (body.kind === 'cycle') { const o = {}; o.self = o; return o; }
      if (body.kind === 'bigint') return { n: 10n };
      if (body.kind === 'deep') return { a: [{ b: { c: [Symbol('s')] } }] };
      if (body.kind === 'toJSON') return { toJSON: () => ({ f: () => 1, kept: 1 }) };
      return () => 1;`);
    expect(
      await run(processor, { kind: 'function' }, { kind: 'cycle' }, { kind: 'bigint' }, { kind: 'deep' }, { kind: 'toJSON' }, { kind: 'top' }),
    ).toStrictEqual([
      failed('the object the script returned is not JSON-serialisable: TypeError: property "f" is a function'),
      failed(/^the object the script returned is not JSON-serialisable: TypeError: Converting circular structure to JSON/),
      failed(/^the object the script returned is not JSON-serialisable: TypeError: Do not know how to serialize a BigInt/),
      failed('the object the script returned is not JSON-serialisable: TypeError: property "0" is a symbol'),
      failed('the object the script returned is not JSON-serialisable: TypeError: property "f" is a function'),
      failed('a transformer script must return an object (or nothing), got function'),
    ]);
  });

  it('fails a message whose body cannot be serialised; the others of the batch succeed', async () => {
    const processor = await processorFor('return { n: body.n };');
    const cyclic: Record<string, unknown> = { n: 1 };
    cyclic.self = cyclic;
    const outcomes = await processor.process([message({ n: 0 }, 'm0'), message(cyclic, 'm1'), message({ n: 2 }, 'm2')], new AbortController().signal);
    expect(outcomes).toStrictEqual([
      { ok: true, outputs: [message({ n: 0 }, 'm0')] },
      failed('the message body is not JSON-serialisable'),
      { ok: true, outputs: [message({ n: 2 }, 'm2')] },
    ]);
  });

  it("fails a message whose script throws with the error's name and message; the others of the batch succeed", async () => {
    const processor = await processorFor("if (body.bad) throw new RangeError('bad value ' + body.bad); if (body.raw) throw 'plain'; return { ok: 1 };");
    expect(await run(processor, { bad: 7 }, {}, { raw: true })).toStrictEqual([
      failed('RangeError: bad value 7'),
      { ok: true, outputs: [message({ ok: 1 }, 'm1')] },
      failed('script threw plain'),
    ]);
  });

  it('rejects create when the script does not compile, naming the instance and the syntax error', async () => {
    const context = contextFor('return { a: 1 ', 'transformer', 'MessageTransformer_0b1d');
    const creating = createJavaScriptProcessor(context, 'transformer', DEFAULT_SCRIPT_LIMITS);
    await expect(creating).rejects.toBeInstanceOf(ScriptCompileError);
    await expect(creating).rejects.toThrow(
      /^MessageTransformer_0b1d\.options\.script: the JavaScript script does not compile: SyntaxError: Unexpected token '\)' \[script:2:\d+\]$/,
    );
    const error = (await creating.catch((caught: unknown) => caught)) as ScriptCompileError;
    expect(error.kind).toBe('invalid-argument');
    expect(error.violations).toStrictEqual([
      { field: 'MessageTransformer_0b1d.options.script', description: expect.stringContaining('SyntaxError'), reason: 'SCRIPT_SYNTAX' },
    ]);
  });

  it('locates the syntax error in the script', async () => {
    await expect(processorFor('const a = 1;\nlet x = ;\nreturn { a };')).rejects.toThrow(
      "the JavaScript script does not compile: SyntaxError: Unexpected token ';' [script:2:9]",
    );
  });

  it('rejects a script that tries to close the function body early', async () => {
    await expect(processorFor('return body; }); (function () {')).rejects.toThrow(/does not compile: SyntaxError: /);
  });
});

describe('JavaScript filter', () => {
  it('passes the message unchanged when the script returns true and drops it on false', async () => {
    const processor = await processorFor('return body.score > 5;', 'filter');
    const kept = message({ score: 9, nested: { x: [1, 2] } }, 'keep');
    const outcomes = await processor.process([kept, message({ score: 1 }, 'drop')], new AbortController().signal);
    expect(outcomes).toStrictEqual([
      { ok: true, outputs: [kept] },
      { ok: true, outputs: [] },
    ]);
    const [passed] = outcomes;
    expect(passed?.ok === true ? passed.outputs[0] : undefined).toBe(kept);
  });

  it('fails a result that is not a boolean, naming the type it got', async () => {
    const processor = await processorFor('return body.value;', 'filter');
    expect(await run(processor, { value: 1 }, { value: 'yes' }, {}, { value: null }, { value: {} })).toStrictEqual([
      failed('a filter script must return true or false, got number'),
      failed('a filter script must return true or false, got string'),
      failed('a filter script must return true or false, got undefined'),
      failed('a filter script must return true or false, got null'),
      failed('a filter script must return true or false, got object'),
    ]);
  });
});

describe('limits', () => {
  it('fails only the message that loops forever, in its batch and in later calls', async () => {
    const processor = await processorFor('if (body.loop) { while (true) {} } return { n: body.n };', 'transformer', QUICK);
    const outcomes = await run(processor, { n: 0 }, { loop: true }, { n: 2 });
    expect(outcomes).toStrictEqual([
      { ok: true, outputs: [message({ n: 0 }, 'm0')] },
      timeLimit(QUICK.timeoutMs),
      { ok: true, outputs: [message({ n: 2 }, 'm2')] },
    ]);
    expect(await run(processor, { n: 5 })).toStrictEqual([{ ok: true, outputs: [message({ n: 5 }, 'm0')] }]);
    expect(await run(processor, { loop: true })).toStrictEqual([timeLimit(QUICK.timeoutMs)]);
    expect(await run(processor, { n: 6 })).toStrictEqual([{ ok: true, outputs: [message({ n: 6 }, 'm0')] }]);
  });

  it('fails a message that finishes but took longer than the limit', async () => {
    const processor = await processorFor('const end = Date.now() + body.ms; while (Date.now() < end) {} return {};', 'transformer', QUICK);
    expect(await run(processor, { ms: 0 }, { ms: QUICK.timeoutMs + 100 }, { ms: 0 })).toStrictEqual([
      { ok: true, outputs: [message({}, 'm0')] },
      timeLimit(QUICK.timeoutMs),
      { ok: true, outputs: [message({}, 'm2')] },
    ]);
  });

  it('runs a batch whose messages together take longer than one limit, each within it', async () => {
    // the limit is per message, not per batch: each message spins for at least a tenth of the limit and
    // there are eleven of them, so the batch takes longer than one limit however fast the machine is,
    // while each message leaves nine tenths of its limit for a loaded machine's stalls
    const limits: ScriptLimits = { memoryLimitMb: 32, timeoutMs: 2000 };
    const eachMs = limits.timeoutMs / 10;
    const processor = await processorFor(`const end = Date.now() + ${eachMs}; while (Date.now() < end) {} return { n: body.n };`, 'transformer', limits);
    const bodies = Array.from({ length: 11 }, (_, n) => ({ n }));
    const started = performance.now();
    const outcomes = await run(processor, ...bodies);
    expect(performance.now() - started).toBeGreaterThan(limits.timeoutMs);
    expect(outcomes).toStrictEqual(bodies.map((body, n) => ({ ok: true, outputs: [message(body, `m${n}`)] })));
  });

  it('fails only the message that allocates without end and keeps working afterwards', async () => {
    const processor = await processorFor(
      'if (body.hog) { const a = []; while (true) a.push(new Array(1e6).fill(1)); } globalThis.seen = (globalThis.seen || 0) + 1; return { n: body.n };',
      'transformer',
      { memoryLimitMb: 16, timeoutMs: 5000 },
    );
    const outcomes = await run(processor, { n: 0 }, { hog: true }, { n: 2 });
    expect(outcomes).toStrictEqual([
      { ok: true, outputs: [message({ n: 0 }, 'm0')] },
      failed('script exceeded its memory limit of 16 MB', 'resource-exhausted'),
      { ok: true, outputs: [message({ n: 2 }, 'm2')] },
    ]);
    expect(await run(processor, { hog: true })).toStrictEqual([failed('script exceeded its memory limit of 16 MB', 'resource-exhausted')]);
    expect(await run(processor, { n: 3 }, { n: 4 })).toStrictEqual([
      { ok: true, outputs: [message({ n: 3 }, 'm0')] },
      { ok: true, outputs: [message({ n: 4 }, 'm1')] },
    ]);
    expect(logged()).toContain('script isolate recreated');
  });

  it('keeps concurrent batches apart while one of them recreates the isolate', async () => {
    const processor = await processorFor('if (body.hog) { const a = []; while (true) a.push(new Array(1e6).fill(1)); } return { n: body.n };', 'transformer', {
      memoryLimitMb: 16,
      timeoutMs: 5000,
    });
    const [first, second, third] = await Promise.all([
      run(processor, { n: 1 }, { hog: true }),
      run(processor, { n: 2 }),
      run(processor, { hog: true }, { n: 3 }),
    ]);
    expect(first).toStrictEqual([{ ok: true, outputs: [message({ n: 1 }, 'm0')] }, failed('script exceeded its memory limit of 16 MB', 'resource-exhausted')]);
    expect(second).toStrictEqual([{ ok: true, outputs: [message({ n: 2 }, 'm0')] }]);
    expect(third).toStrictEqual([failed('script exceeded its memory limit of 16 MB', 'resource-exhausted'), { ok: true, outputs: [message({ n: 3 }, 'm1')] }]);
  });

  it('does not let WebAssembly memory slip past the memory limit', async () => {
    const processor = await processorFor('return { wasm: typeof WebAssembly };');
    expect(await run(processor, {})).toStrictEqual([{ ok: true, outputs: [message({ wasm: 'undefined' }, 'm0')] }]);
  });
});

describe('small batches', () => {
  // after a streak of quick calls, batches of a few messages run by a synchronous isolate call; any
  // call under a second counts as quick here, so that a loaded machine still builds the streak
  const LENIENT: SynchronousCalls = { ...DEFAULT_SYNCHRONOUS_CALLS, quickCallMs: 1000 };
  const syncProcessorFor = async (script: string, limits: ScriptLimits = DEFAULT_SCRIPT_LIMITS): Promise<Processor> => {
    const processor = await createJavaScriptProcessor(contextFor(script, 'transformer'), 'transformer', limits, LENIENT);
    processors.push(processor);
    return processor;
  };
  const quickStreak = async (processor: Processor): Promise<void> => {
    for (let n = 0; n < 40; n++) expect(await run(processor, { n })).toStrictEqual([{ ok: true, outputs: [message({ n }, 'm0')] }]);
  };

  it('gives a message slower than a synchronous call allows, but within its limit, its result', async () => {
    const processor = await syncProcessorFor('if (body.ms) { const end = Date.now() + body.ms; while (Date.now() < end) {} } return { n: body.n };');
    await quickStreak(processor);
    expect(await run(processor, { n: 41, ms: 120 })).toStrictEqual([{ ok: true, outputs: [message({ n: 41 }, 'm0')] }]);
    expect(logged()).toContain('script overran a synchronous call');
    expect(await run(processor, { n: 42 })).toStrictEqual([{ ok: true, outputs: [message({ n: 42 }, 'm0')] }]);
  });

  it('fails a message that loops at its full time limit, and the script keeps working', async () => {
    const processor = await syncProcessorFor('if (body.loop) { while (true) {} } return { n: body.n };', QUICK);
    await quickStreak(processor);
    expect(await run(processor, { n: 1 }, { loop: true })).toStrictEqual([{ ok: true, outputs: [message({ n: 1 }, 'm0')] }, timeLimit(QUICK.timeoutMs)]);
    expect(await run(processor, { n: 2 })).toStrictEqual([{ ok: true, outputs: [message({ n: 2 }, 'm0')] }]);
  });

  it('fails a message that eats the heap in a synchronous call and recreates the isolate', async () => {
    const processor = await syncProcessorFor('if (body.hog) { const a = []; while (true) a.push(new Array(1e6).fill(1)); } return { n: body.n };', {
      memoryLimitMb: 16,
      timeoutMs: 5000,
    });
    await quickStreak(processor);
    expect(await run(processor, { hog: true })).toStrictEqual([failed('script exceeded its memory limit of 16 MB', 'resource-exhausted')]);
    expect(await run(processor, { n: 3 })).toStrictEqual([{ ok: true, outputs: [message({ n: 3 }, 'm0')] }]);
  });
});

describe('isolation', () => {
  it.each([
    ['process', 'return { v: process.env };', 'ReferenceError: process is not defined'],
    ['require', "return { v: require('fs') };", 'ReferenceError: require is not defined'],
    ['globalThis.process', 'return { v: globalThis.process.pid };', "TypeError: Cannot read properties of undefined (reading 'pid')"],
    ['the Function constructor', "return { v: this.constructor.constructor('return process')() };", 'ReferenceError: process is not defined'],
    ['an error constructor', "return { v: new Error().constructor.constructor('return process')().pid };", 'ReferenceError: process is not defined'],
    // isolated-vm refuses dynamic import from outside the script's reach, so its own catch cannot see it
    ['endless recursion', 'const down = () => down(); return down();', 'RangeError: Maximum call stack size exceeded'],
    ['import()', "try { return { v: import('node:fs') }; } catch { return { v: 'caught' }; }", 'script engine failure: Not supported'],
  ])('never reaches the host through %s', async (_, script, error) => {
    const processor = await processorFor(script);
    expect(await run(processor, {})).toStrictEqual([failed(error)]);
  });

  it('has no host globals in the isolate', async () => {
    const processor = await processorFor(`
      const names = Object.getOwnPropertyNames(globalThis);
      return { host: names.filter((name) => ['process', 'require', 'module', 'Buffer', 'global', 'setTimeout', 'fetch', 'ivm'].includes(name)) };`);
    expect(await run(processor, {})).toStrictEqual([{ ok: true, outputs: [message({ host: [] }, 'm0')] }]);
  });

  it('keeps a script that replaces JSON and Date from breaking the engine', async () => {
    const processor = await processorFor('JSON.parse = () => 1; JSON.stringify = () => "x"; Date.now = () => 0; return { n: body.n };');
    expect(await run(processor, { n: 1 }, { n: 2 })).toStrictEqual([
      { ok: true, outputs: [message({ n: 1 }, 'm0')] },
      { ok: true, outputs: [message({ n: 2 }, 'm1')] },
    ]);
  });

  it('logs neither bodies nor script text', async () => {
    const processor = await processorFor('if (body.secret) { while (true) {} } return { n: 1 }; // SCRIPT-MARKER', 'transformer', QUICK);
    await run(processor, { secret: 'BODY-MARKER' }, { n: 1 });
    const text = logged();
    expect(text).toContain('one by one');
    expect(text).not.toContain('BODY-MARKER');
    expect(text).not.toContain('SCRIPT-MARKER');
  });
});

describe('close', () => {
  it('disposes the isolate, can be called twice, and refuses later batches', async () => {
    const processor = await createJavaScriptProcessor(contextFor('return body;', 'transformer'), 'transformer', DEFAULT_SCRIPT_LIMITS);
    await processor.close();
    await processor.close();
    await expect(run(processor, {})).rejects.toThrow(/the script processor is closed/);
  });
});
