import { FailedPreconditionError, ValidationError } from '@loom/domain';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ivm from 'isolated-vm';
import { type ComponentContext, type LoomMessage, type Outcome, outcome, type Processor } from '../runtime/component.js';
import { scriptFailure } from './script-error.js';

/** The memory and time a script may use: memory per isolate, time per message. */
export interface ScriptLimits {
  /** Heap of the component's isolate, in MB (isolated-vm needs at least 8). */
  memoryLimitMb: number;
  /** Time one message may take, in ms. */
  timeoutMs: number;
}

/** The limits a script component runs with unless configured otherwise. */
export const DEFAULT_SCRIPT_LIMITS: ScriptLimits = Object.freeze({ memoryLimitMb: 64, timeoutMs: 1000 });

/** A component's script does not compile; names the instance and the syntax error. */
export class ScriptCompileError extends ValidationError {
  constructor(
    readonly instanceName: string,
    readonly detail: string,
    readonly language: 'JavaScript' | 'Python' = 'JavaScript',
  ) {
    super([{ field: `${instanceName}.options.script`, description: `the ${language} script does not compile: ${detail}`, reason: 'SCRIPT_SYNTAX' }]);
  }
}

/**
 * Builds the processor of a MessageTransformer or MessageFilter whose script is JavaScript. The
 * script is the body of a function of `body` (the message body); it runs in an isolate of its
 * own with nothing of the host in it. Rejects with ScriptCompileError when the script does not
 * compile.
 */
export async function createJavaScriptProcessor(
  context: ComponentContext,
  role: 'transformer' | 'filter',
  limits: ScriptLimits,
  synchronous: SynchronousCalls = DEFAULT_SYNCHRONOUS_CALLS,
): Promise<Processor> {
  checkLimits(context.name, limits);
  const source = context.options.string('script');
  const engine = await startEngine(source, role, limits);
  if (typeof engine === 'string') throw new ScriptCompileError(context.name, engine);
  return new JavaScriptProcessor(context, role, limits, source, engine, synchronous);
}

function checkLimits(instanceName: string, limits: ScriptLimits): void {
  if (!Number.isInteger(limits.memoryLimitMb) || limits.memoryLimitMb < 8) {
    throw ValidationError.of(`${instanceName}.limits.memoryLimitMb`, 'must be an integer of at least 8', 'OUT_OF_RANGE');
  }
  if (!Number.isInteger(limits.timeoutMs) || limits.timeoutMs < 1) {
    throw ValidationError.of(`${instanceName}.limits.timeoutMs`, 'must be a positive integer', 'OUT_OF_RANGE');
  }
}

// The script runner that runs inside each isolate, kept in a file of its own so that it is linted
// as the JavaScript it is; it says what it evaluates to and answers.
const BOOTSTRAP = readFileSync(fileURLToPath(new URL('../../script-host/isolate-runner.js', import.meta.url)), 'utf8');

type RunFunction = (input: string, budgetMs: number, limitMs: number) => string;
type PrepareFunction = (source: string, role: string) => RunFunction | string;

/** One isolate with the compiled script in its one context. */
interface Engine {
  readonly isolate: ivm.Isolate;
  readonly run: ivm.Reference<RunFunction>;
}

/** Starts an isolate and compiles the script in it; answers the syntax error's text when it does not compile. */
async function startEngine(source: string, role: 'transformer' | 'filter', limits: ScriptLimits): Promise<Engine | string> {
  const isolate = new ivm.Isolate({ memoryLimit: limits.memoryLimitMb });
  try {
    const context = await isolate.createContext();
    const bootstrap = await isolate.compileScript(BOOTSTRAP, { filename: 'loom-script-runner.js' });
    const prepare = (await bootstrap.run(context, { reference: true, timeout: limits.timeoutMs })) as ivm.Reference<PrepareFunction>;
    const prepared = await prepare.apply(undefined, [source, role], { result: { reference: true }, timeout: limits.timeoutMs });
    if (prepared.typeof === 'function') return { isolate, run: prepared as ivm.Reference<RunFunction> };
    const detail = await prepared.copy();
    const located = await locateSyntaxError(isolate, source);
    isolate.dispose();
    return located ?? (typeof detail === 'string' ? detail : 'the script does not compile');
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
}

/**
 * The syntax error with its line and column in the script (`SyntaxError: Unexpected token '}'
 * [script:3:5]`), which the Function constructor does not give; undefined when the script
 * compiles as a plain wrapped function (it broke out of the function body).
 */
async function locateSyntaxError(isolate: ivm.Isolate, source: string): Promise<string | undefined> {
  try {
    const compiled = await isolate.compileScript(`(function (body) {\n${source}\n})`, { filename: 'script', lineOffset: -1 });
    compiled.release();
    return undefined;
  } catch (error) {
    return error instanceof SyntaxError ? `SyntaxError: ${error.message}` : undefined;
  }
}

/** What one isolate call made of the messages given to it. */
type CallAnswer =
  /** One entry per message from the first, possibly fewer than given (the time budget ran out). */
  | { readonly kind: 'results'; readonly entries: readonly unknown[] }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'memory' }
  /** The call failed for another reason; `error` is the failure to report for a message run alone. */
  | { readonly kind: 'broken'; readonly error: string };

/** A message waiting for its outcome and its index in the batch. */
interface Pending {
  readonly index: number;
  readonly message: LoomMessage;
}

const UNREADABLE = 'script engine failure: the script runner answered something unreadable';

// room for parsing the bodies and serialising the answers on top of the script's own time
const CALL_OVERHEAD_MS = 50;

/**
 * When a batch is run by a synchronous isolate call (3–4 µs of overhead) rather than an
 * asynchronous one (35–69 µs, a thread hop each way): a batch of at most `batch` messages, once
 * the script has shown it is quick (the last `streak` calls each took under `quickCallMs`). A
 * synchronous call blocks the event loop, so it starts messages for at most `quickCallMs` and is
 * cut off after `timeoutMs`; a script cut off there is never run synchronously again, and the
 * messages of that call are run again on the asynchronous path with their full time limit (as
 * after any call cut short).
 */
export interface SynchronousCalls {
  readonly batch: number;
  readonly streak: number;
  readonly quickCallMs: number;
  readonly timeoutMs: number;
}

export const DEFAULT_SYNCHRONOUS_CALLS: SynchronousCalls = Object.freeze({ batch: 4, streak: 16, quickCallMs: 2, timeoutMs: 50 });

class JavaScriptProcessor implements Processor {
  private engine: Engine | undefined;
  private closed = false;
  private queue: Promise<unknown> = Promise.resolve();
  /** Consecutive calls that took under synchronous.quickCallMs. */
  private quickCalls = 0;
  /** False once a synchronous call was cut off: the script is not quick enough to block for. */
  private syncAllowed = true;

  constructor(
    private readonly context: ComponentContext,
    private readonly role: 'transformer' | 'filter',
    private readonly limits: ScriptLimits,
    private readonly source: string,
    engine: Engine,
    private readonly synchronous: SynchronousCalls,
  ) {
    this.engine = engine;
  }

  process(batch: readonly LoomMessage[], signal: AbortSignal): Promise<readonly Outcome[]> {
    // calls on one isolate run one at a time anyway; queueing them here keeps a recreation of
    // the isolate from racing another batch
    const work = this.queue.then(
      () => this.processNow(batch, signal),
      () => this.processNow(batch, signal),
    );
    this.queue = work.catch(() => undefined);
    return work;
  }

  close(): Promise<void> {
    this.closed = true;
    const engine = this.engine;
    this.engine = undefined;
    if (engine !== undefined && !engine.isolate.isDisposed) engine.isolate.dispose();
    return Promise.resolve();
  }

  private async processNow(batch: readonly LoomMessage[], signal: AbortSignal): Promise<readonly Outcome[]> {
    this.ensureOpen();
    const outcomes: Outcome[] = new Array<Outcome>(batch.length);
    const pending: Pending[] = [];
    batch.forEach((message, index) => {
      if (isJsonObject(message.body)) pending.push({ index, message });
      else outcomes[index] = scriptFailure('the message body is not a JSON object');
    });

    const { timeoutMs } = this.limits;
    let next = 0;
    while (next < pending.length) {
      signal.throwIfAborted();
      const rest = pending.slice(next);
      const answer = await this.call(rest, timeoutMs, 2 * timeoutMs + CALL_OVERHEAD_MS);
      if (answer.kind === 'results') {
        answer.entries.forEach((entry, offset) => {
          const item = rest[offset];
          if (item !== undefined) outcomes[item.index] = this.outcomeOf(entry, item.message);
        });
        next += answer.entries.length;
        continue;
      }
      // the call was cut short (a message looped or ate the heap) and its results are lost: run
      // the rest one message per call, so the limits fall on the culprit alone
      if (answer.kind !== 'broken')
        this.context.logger.warn(
          { component: this.context.name, cause: answer.kind, messages: rest.length },
          'script batch hit a limit; running its messages one by one',
        );
      for (const item of rest) {
        signal.throwIfAborted();
        outcomes[item.index] = await this.processAlone(item);
      }
      next = pending.length;
    }
    return outcomes;
  }

  private async processAlone(item: Pending): Promise<Outcome> {
    let answer = await this.call([item], this.limits.timeoutMs, this.limits.timeoutMs + CALL_OVERHEAD_MS);
    if (answer.kind === 'broken') {
      // an engine failure left over from an earlier call (a refused dynamic import, seen under load) can land on
      // this one: a message that fails the same way twice is the culprit, one that does not gets its own answer
      const again = await this.call([item], this.limits.timeoutMs, this.limits.timeoutMs + CALL_OVERHEAD_MS);
      if (again.kind !== 'broken') answer = again;
    }
    switch (answer.kind) {
      case 'results':
        return this.outcomeOf(answer.entries[0], item.message);
      case 'timeout':
        return this.overTime();
      case 'memory':
        return scriptFailure(`script exceeded its memory limit of ${this.limits.memoryLimitMb} MB`, 'resource-exhausted');
      case 'broken':
        return scriptFailure(answer.error);
    }
  }

  /** One isolate call for these messages; recreates the isolate first if the last call used up its memory. */
  private async call(items: readonly Pending[], budgetMs: number, callTimeoutMs: number): Promise<CallAnswer> {
    const input = encodeBodies(items);
    if (input === undefined) return { kind: 'broken', error: 'the message body is not JSON-serialisable' };
    const engine = await this.liveEngine();
    const { batch, streak, quickCallMs, timeoutMs: syncTimeoutMs } = this.synchronous;
    const sync = this.syncAllowed && items.length <= batch && this.quickCalls >= streak;
    const started = performance.now();
    let result: unknown;
    try {
      const args: [string, number, number] = [input, sync ? Math.min(budgetMs, quickCallMs) : budgetMs, this.limits.timeoutMs];
      result = sync
        ? engine.run.applySync(undefined, args, { timeout: Math.min(callTimeoutMs, syncTimeoutMs) })
        : await engine.run.apply(undefined, args, { timeout: callTimeoutMs });
    } catch (error) {
      this.quickCalls = 0;
      this.ensureOpen();
      if (engine.isolate.isDisposed) {
        // isolated-vm disposes an isolate that reaches its memory limit
        if (this.engine === engine) this.engine = undefined;
        return { kind: 'memory' };
      }
      const text = error instanceof Error ? error.message : String(error);
      if (/timed out/i.test(text)) {
        if (sync && syncTimeoutMs < callTimeoutMs) {
          this.syncAllowed = false;
          this.context.logger.warn({ component: this.context.name }, 'script overran a synchronous call; it runs asynchronously from now on');
          return this.call(items, budgetMs, callTimeoutMs);
        }
        return { kind: 'timeout' };
      }
      return { kind: 'broken', error: `script engine failure: ${text}` };
    }
    this.quickCalls = performance.now() - started < quickCallMs ? this.quickCalls + 1 : 0;
    const entries = parseEntries(result, items.length);
    return entries === undefined ? { kind: 'broken', error: UNREADABLE } : { kind: 'results', entries };
  }

  private async liveEngine(): Promise<Engine> {
    this.ensureOpen();
    if (this.engine !== undefined && !this.engine.isolate.isDisposed) return this.engine;
    this.engine = undefined;
    const started = await startEngine(this.source, this.role, this.limits);
    if (typeof started === 'string') throw new FailedPreconditionError(`${this.context.name}: the script no longer compiles: ${started}`);
    if (this.closed) {
      started.isolate.dispose();
      this.ensureOpen();
    }
    this.context.logger.warn({ component: this.context.name }, 'script isolate recreated after it ran out of memory; script globals were reset');
    this.engine = started;
    return started;
  }

  private outcomeOf(entry: unknown, message: LoomMessage): Outcome {
    // no output (transformer) and dropped (filter) are the same outcome
    if (entry === 0) return outcome.none();
    if (entry === 1 && this.role === 'filter') return outcome.emit(message);
    if (entry === 2) return this.overTime();
    if (typeof entry === 'object' && entry !== null) {
      const { v: body, e: error } = entry as { v?: unknown; e?: unknown };
      if (typeof error === 'string') return scriptFailure(error);
      if (this.role === 'transformer' && isJsonObject(body)) return outcome.emit({ id: message.id, headers: message.headers, body });
    }
    return scriptFailure(UNREADABLE);
  }

  private overTime(): Outcome {
    return scriptFailure(`script exceeded its time limit of ${this.limits.timeoutMs} ms`, 'deadline-exceeded');
  }

  private ensureOpen(): void {
    if (this.closed) throw new FailedPreconditionError(`${this.context.name}: the script processor is closed`);
  }
}

/** The bodies as one JSON array, or undefined when one of them cannot be serialised (a cycle, a BigInt). */
function encodeBodies(items: readonly Pending[]): string | undefined {
  try {
    return JSON.stringify(items.map((item) => item.message.body));
  } catch {
    return undefined;
  }
}

/** The runner's answer as entries, or undefined when it is not a JSON array of 1 to `count` entries. */
function parseEntries(result: unknown, count: number): readonly unknown[] | undefined {
  if (typeof result !== 'string') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(result);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || parsed.length > count) return undefined;
  return parsed as readonly unknown[];
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
