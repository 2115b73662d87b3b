import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { type Readable, type Writable } from 'node:stream';
import { FailedPreconditionError, UnavailableError } from '@loom/domain';
import { type ComponentContext, ComponentFailedError, type LoomMessage, type Outcome, outcome, type Processor } from '../runtime/component.js';
import { ScriptCompileError } from './javascript.js';
import { scriptFailure } from './script-error.js';
import { type PythonSandbox, sandboxCommand } from './sandbox.js';
import { type WarmInterpreters } from './warm-interpreters.js';

/** The memory and time a Python script may use: memory per component (its interpreter), time per message. */
export interface PythonLimits {
  readonly memoryLimitMb: number;
  readonly timeoutMs: number;
}

/** How long a script host may take to load the interpreter and compile the script. */
const START_TIMEOUT_MS = 60_000;
/** The exit code of a script host whose interpreter suffered a fatal error after answering the message that caused it. */
const FATAL_EXIT = 70;
/** How often a host answers what it has while a batch runs, as a share of the time limit (its progress for the time limit). */
const FLUSHES_PER_TIME_LIMIT = 10;
/** Most characters of a script's error text kept (it goes to the failure handler and the audit log). */
const MAX_ERROR_LENGTH = 2_000;
/** Most bytes of a script host's own output kept for the log when it fails. */
const STDERR_KEPT = 4_096;

/** The script host process failed to start or stopped answering. */
export class ScriptHostError extends UnavailableError {}

/** The answer to one message, or the setup's `{ ready }`. */
interface Answer {
  readonly ready?: boolean;
  readonly ok?: boolean;
  /** The new body (transformer: an object, or null for no output), or whether to keep the message (filter). */
  readonly out?: unknown;
  readonly error?: string;
}

/** One line of answers: to messages i, i+1, ... of the batch `id`, or the setup's `{ ready }` (no id). */
interface AnswerLine {
  readonly ready?: boolean;
  readonly error?: string;
  readonly id?: number;
  readonly i?: number;
  /** The answers of the line, read from its `out` (each message's result) and `errors` (the error text by position). */
  readonly answers?: readonly Answer[];
}

/**
 * Builds the processor of a MessageTransformer or MessageFilter whose script is Python. The script
 * runs in a script host process of its own (see sandbox.ts and script-host/python-host.mjs): the
 * interpreter starts once per component, not per message (from a warm interpreter's snapshot when
 * `warm` has one), and the component's workers (its `concurrency`) share it, each batch and its
 * answers matched by a request id. A message over the time limit, or one that brings the interpreter
 * down, fails alone: the host is replaced and the rest go on. Rejects with ScriptCompileError when
 * the script does not compile.
 */
export async function createPythonProcessor(
  context: ComponentContext,
  role: 'transformer' | 'filter',
  limits: PythonLimits,
  sandbox: PythonSandbox,
  warm?: WarmInterpreters,
): Promise<Processor> {
  const script = context.options.string('script');
  const processor = new PythonProcessor(context, role, limits, sandbox, script, context.privateDirectory(), warm);
  try {
    await processor.start();
  } catch (error) {
    await processor.close();
    throw error;
  }
  return processor;
}

/** The id of the setup request, whose one answer is `{ ready }`. */
const SETUP = 0;
/** The descriptor on which a host reads the snapshot of a warm interpreter. */
const SNAPSHOT_FD = 4;

/** A batch sent to a host, and the answers it got so far. */
class HostRequest {
  readonly answers: Answer[] = [];
  received = 0;
  wake: (() => void) | undefined;

  constructor(
    readonly id: number,
    readonly expected: number,
  ) {}
}

/**
 * One running script host. It runs its requests one after the other in the order they were sent,
 * so the time limit runs only for the request at the head, from the host's last answer (or from
 * when it got work while idle); a request behind it waits without a limit.
 */
class ScriptHost {
  /** Requests not fully answered, in the order the host runs them (Maps keep insertion order). */
  private readonly requests = new Map<number, HostRequest>();
  private nextId = SETUP + 1;
  /** When the host last answered, or got work while idle (epoch ms). */
  private progressAt = Date.now();
  private stderr = '';
  /** The process has exited, or never started. */
  dead = false;
  /** The request the host was running when it died: its first unanswered message is the one to blame. */
  culprit: number | undefined;
  readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    const answers = child.stdio[3] as Readable;
    // a host that dies mid-write, or never starts, surfaces through `exited` and the answers it did not give:
    // its streams' errors (EPIPE, ENOENT) must not become uncaught exceptions of the service
    const note = (error: Error): void => {
      this.stderr = `${this.stderr}\n${error.message}`.slice(-STDERR_KEPT);
    };
    child.on('error', note);
    child.stdin?.on('error', note);
    child.stdio[SNAPSHOT_FD]?.on('error', note);
    answers.on('error', note);
    createInterface({ input: answers, crlfDelay: Infinity }).on('line', (line) => this.take(line));
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
    });
    this.exited = new Promise((resolve) => {
      const ended = (code: number | null): void => {
        if (this.dead) return;
        this.dead = true;
        // a host that exits FATAL_EXIT answered the message that broke it: no request is to blame
        if (code !== FATAL_EXIT) this.culprit ??= this.requests.keys().next().value;
        for (const request of this.requests.values()) request.wake?.();
        resolve(code);
      };
      // 'close' comes after the answer stream has ended, so every answer the host wrote has been read by then
      child.on('close', ended);
      // a process that could not be spawned emits no exit
      child.on('error', () => ended(null));
    });
  }

  /** What the host wrote to its standard error lately (print output, interpreter complaints). */
  get output(): string {
    return this.stderr;
  }

  /** Sends the setup, and the snapshot of a warm interpreter to start from if there is one; its one answer is `{ ready }`. */
  setup(value: Record<string, unknown>, snapshot: Buffer | undefined): HostRequest {
    const request = new HostRequest(SETUP, 1);
    this.requests.set(SETUP, request);
    (this.child.stdin as Writable).write(`${JSON.stringify({ ...value, snapshot: snapshot !== undefined, snapshotBytes: snapshot?.length ?? 0 })}\n`);
    if (snapshot !== undefined) (this.child.stdio[SNAPSHOT_FD] as Writable).end(snapshot);
    return request;
  }

  /** Sends a batch of message bodies, serialised once: `<id> <JSON array>`. */
  send(bodies: readonly unknown[]): HostRequest {
    const request = new HostRequest(this.nextId++, bodies.length);
    if (this.requests.size === 0) this.progressAt = Date.now();
    this.requests.set(request.id, request);
    (this.child.stdin as Writable).write(`${request.id} ${JSON.stringify(bodies)}\n`);
    return request;
  }

  /**
   * The next answer to a request; undefined when the host exited, or when the request is at the
   * head and the host gave no answer within `timeoutMs`.
   */
  async next(request: HostRequest, timeoutMs: number): Promise<Answer | undefined> {
    for (;;) {
      const answer = request.answers.shift();
      if (answer !== undefined) return answer;
      if (this.dead || request.received === request.expected) return undefined;
      const atHead = this.requests.keys().next().value === request.id;
      const left = atHead ? this.progressAt + timeoutMs - Date.now() : Infinity;
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = Number.isFinite(left) ? setTimeout(resolve, left) : undefined;
        request.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      request.wake = undefined;
    }
  }

  /** Ends the host; `culprit` is the request whose message it is killed for (over its time limit). */
  kill(culprit?: number): void {
    if (!this.dead && culprit !== undefined) this.culprit ??= culprit;
    this.child.kill('SIGKILL');
  }

  /** One line of answers: to the request it names, in order; the host runs untrusted code, so anything else ends it. */
  private take(text: string): void {
    const line = parseAnswerLine(text);
    const request = this.requests.get(line?.id ?? SETUP);
    const head = this.requests.keys().next().value;
    const answers = line?.answers ?? (line === undefined ? [] : [line]);
    // the host runs its requests in order: an answer to any but the head, out of order or beyond the batch is forged
    const inOrder = line?.ready !== undefined || (line?.i === request?.received && answers.length > 0);
    if (line === undefined || request === undefined || request.id !== head || !inOrder || request.received + answers.length > request.expected) {
      this.stderr = `${this.stderr}\nthe script host broke its protocol`.slice(-STDERR_KEPT);
      this.kill();
      return;
    }
    this.progressAt = Date.now();
    request.answers.push(...answers);
    request.received += answers.length;
    if (request.received === request.expected) {
      this.requests.delete(request.id);
      // the next request is at the head now: its time limit starts
      this.requests.values().next().value?.wake?.();
    }
    request.wake?.();
  }
}

class PythonProcessor implements Processor {
  private host: ScriptHost | undefined;
  /** A host being started for the workers that found none: they all wait for the same one. */
  private starting: Promise<ScriptHost> | undefined;
  private restarts = 0;
  private closed = false;

  constructor(
    private readonly context: ComponentContext,
    private readonly role: 'transformer' | 'filter',
    private readonly limits: PythonLimits,
    private readonly sandbox: PythonSandbox,
    private readonly script: string,
    private readonly privateDir: string,
    private readonly warm: WarmInterpreters | undefined,
  ) {}

  /** Starts a script host (from a warm interpreter when there is one) and waits until its interpreter has compiled the script. */
  async start(): Promise<ScriptHost> {
    const command = sandboxCommand(this.sandbox, { memoryLimitMb: this.limits.memoryLimitMb, privateDir: this.privateDir });
    const snapshot = this.warm?.take();
    const child = spawn(command.file, command.args, {
      env: command.env,
      cwd: this.privateDir,
      stdio: ['pipe', 'ignore', 'pipe', 'pipe', snapshot === undefined ? 'ignore' : 'pipe'],
    });
    const host = new ScriptHost(child);
    const setup = host.setup(
      {
        script: this.script,
        role: this.role,
        policy: this.sandbox.policy,
        pyodideDir: command.pyodideDir,
        readGrants: command.readGrants,
        mounts: command.mounts,
        split: command.split,
        writeGrant: this.privateDir,
        flushMs: Math.max(1, Math.floor(this.limits.timeoutMs / FLUSHES_PER_TIME_LIMIT)),
      },
      snapshot,
    );
    const ready = await host.next(setup, START_TIMEOUT_MS);
    if (ready?.ready === true && this.closed) {
      // closed while this host was starting: nobody would ever end it
      host.kill();
      throw new FailedPreconditionError(`${this.context.name} is closed`);
    }
    if (ready?.ready === true) {
      this.host = host;
      return host;
    }
    host.kill();
    if (ready?.ready === false) throw new ScriptCompileError(this.context.name, ready.error ?? 'unknown error', 'Python');
    throw new ScriptHostError(
      `${this.context.name}: the Python script host did not start: ${lastLines(host.output) || 'no answer within the start time limit'}`,
    );
  }

  async process(batch: readonly LoomMessage[]): Promise<readonly Outcome[]> {
    const outcomes: Outcome[] = [];
    let oneByOne = false;
    while (outcomes.length < batch.length) {
      const rest = batch.slice(outcomes.length);
      const { done, blameUnknown } = await this.run(oneByOne ? rest.slice(0, 1) : rest);
      outcomes.push(...done);
      // a host answers a batch in few lines: when it stopped with several messages unanswered, run them one batch
      // each, so that the one to blame fails alone
      oneByOne ||= blameUnknown;
    }
    return outcomes;
  }

  /**
   * Runs messages on the current host until they are all answered, or until the host goes over the
   * time limit or down. With one message of this request unanswered, that one is to blame: it fails
   * and the host is replaced. With several, which one is not known (the host answers several at a
   * time): none fails, and `blameUnknown` asks the caller to run the rest one at a time. A request
   * that was only waiting behind the one to blame answers what it got (perhaps nothing) and its rest
   * runs on the new host.
   */
  private async run(messages: readonly LoomMessage[]): Promise<{ done: Outcome[]; blameUnknown: boolean }> {
    const host = await this.currentHost();
    const request = host.send(messages.map((message) => message.body));
    const done: Outcome[] = [];
    for (const message of messages) {
      const answer = await host.next(request, this.limits.timeoutMs);
      if (answer !== undefined) {
        done.push(this.outcomeOf(message, answer));
        continue;
      }
      if (host.dead && host.culprit !== request.id) {
        // the interpreter answered the message that broke it, or another request's message did: the rest go to a new host
        this.drop(host);
        return { done, blameUnknown: false };
      }
      const kind = host.dead ? 'unavailable' : 'deadline-exceeded';
      const reason = host.dead
        ? `the Python interpreter stopped (${lastLines(host.output) || `exit ${host.child.exitCode ?? host.child.signalCode}`})`
        : `the script ran longer than the time limit of ${this.limits.timeoutMs} ms`;
      const unanswered = messages.length - done.length;
      this.context.logger.warn(
        { component: this.context.name, messageId: unanswered === 1 ? message.id : undefined, unanswered, reason },
        'Python script host replaced',
      );
      host.kill(request.id);
      this.drop(host);
      if (unanswered > 1) return { done, blameUnknown: true };
      done.push(scriptFailure(reason, kind));
      return { done, blameUnknown: false };
    }
    return { done, blameUnknown: false };
  }

  /** The running host, or a new one; concurrent callers share one start. */
  private currentHost(): Promise<ScriptHost> {
    if (this.host !== undefined && !this.host.dead) return Promise.resolve(this.host);
    this.starting ??= this.restart()
      .catch((error: unknown) => {
        // the component cannot run a single message without a host: the run fails, not each message in turn
        throw new ComponentFailedError(`the Python script host could not be restarted: ${error instanceof Error ? error.message : String(error)}`, {
          cause: error,
        });
      })
      .finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Lets go of a host that is dead or being killed, unless a newer one replaced it already. */
  private drop(host: ScriptHost): void {
    if (this.host === host) this.host = undefined;
  }

  private outcomeOf(message: LoomMessage, answer: Answer): Outcome {
    if (answer.ok !== true) return scriptFailure(typeof answer.error === 'string' ? answer.error.slice(0, MAX_ERROR_LENGTH) : 'the script failed');
    if (this.role === 'filter') return answer.out === true ? outcome.emit(message) : outcome.none();
    if (answer.out === null || answer.out === undefined) return outcome.none();
    if (typeof answer.out !== 'object' || Array.isArray(answer.out)) return scriptFailure('the script host answered something that is not a message');
    return outcome.emit({ id: message.id, headers: message.headers, body: answer.out as Record<string, unknown> });
  }

  private async restart(): Promise<ScriptHost> {
    if (this.closed) throw new FailedPreconditionError(`${this.context.name} is closed`);
    this.restarts += 1;
    this.context.logger.info({ component: this.context.name, restarts: this.restarts }, 'starting a new Python script host');
    return this.start();
  }

  async close(): Promise<void> {
    this.closed = true;
    const host = this.host;
    this.host = undefined;
    if (host !== undefined) {
      (host.child.stdin as Writable).end();
      const exited = await Promise.race([host.exited, new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 2_000).unref())]);
      if (exited === 'late') host.kill();
    }
  }
}

/** A line of answers as the protocol has it (see script-host/python-host.mjs), or undefined for anything else. */
function parseAnswerLine(text: string): AnswerLine | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(value)) return undefined;
  if (value.ready !== undefined) {
    if (typeof value.ready !== 'boolean') return undefined;
    return { ready: value.ready, ...(typeof value.error === 'string' ? { error: value.error } : {}) };
  }
  const { id, i, out, errors } = value;
  if (typeof id !== 'number' || typeof i !== 'number' || !Array.isArray(out) || out.length === 0 || !isRecord(errors)) return undefined;
  const answers: Answer[] = out.map((result: unknown) => ({ ok: true, out: result }));
  for (const [position, error] of Object.entries(errors)) {
    const index = Number(position);
    if (!Number.isInteger(index) || index < 0 || index >= answers.length || typeof error !== 'string') return undefined;
    answers[index] = { ok: false, error };
  }
  return { id, i, answers };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function lastLines(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.includes('ExperimentalWarning') && !line.includes('--trace-warnings'))
    .slice(-2)
    .join(' | ');
}
