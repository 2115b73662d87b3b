import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { type Readable, type Writable } from 'node:stream';
import { FailedPreconditionError, UnavailableError } from '@loom/domain';
import { type ComponentContext, type LoomMessage, type Outcome, outcome, type Processor } from '../runtime/component.js';
import { ScriptCompileError } from './javascript.js';
import { type PythonSandbox, sandboxCommand } from './sandbox.js';

/** The memory and time a Python script may use: memory per component (its interpreter), time per message. */
export interface PythonLimits {
  readonly memoryLimitMb: number;
  readonly timeoutMs: number;
}

/** How long a script host may take to load the interpreter and compile the script. */
const START_TIMEOUT_MS = 60_000;
/** The exit code of a script host whose interpreter suffered a fatal error after answering. */
const FATAL_EXIT = 70;
/** Most characters of a script's error text kept (it goes to the failure handler and the audit log). */
const MAX_ERROR_LENGTH = 2_000;
/** Most bytes of a script host's own output kept for the log when it fails. */
const STDERR_KEPT = 4_096;

/** The script host process failed to start or stopped answering. */
export class ScriptHostError extends UnavailableError {}

interface Answer {
  readonly ready?: boolean;
  readonly i?: number;
  readonly ok?: boolean;
  readonly out?: string | boolean | null;
  readonly error?: string;
}

/**
 * Builds the processor of a MessageTransformer or MessageFilter whose script is Python. The script
 * runs in a script host process of its own (see sandbox.ts and script-host/python-host.mjs): the
 * interpreter starts once per component, not per message. A message over the time limit, or one
 * that brings the interpreter down, fails alone: the host is replaced and the rest of the batch
 * goes on. Rejects with ScriptCompileError when the script does not compile.
 */
export async function createPythonProcessor(
  context: ComponentContext,
  role: 'transformer' | 'filter',
  limits: PythonLimits,
  sandbox: PythonSandbox,
): Promise<Processor> {
  const script = context.options.string('script');
  const processor = new PythonProcessor(context, role, limits, sandbox, script, context.privateDirectory());
  try {
    await processor.start();
  } catch (error) {
    await processor.close();
    throw error;
  }
  return processor;
}

/** One running script host. */
class ScriptHost {
  private readonly answers: Answer[] = [];
  private wake: (() => void) | undefined;
  private stderr = '';
  /** The process has exited, or never started. */
  dead = false;
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
    answers.on('error', note);
    createInterface({ input: answers, crlfDelay: Infinity }).on('line', (line) => {
      // the host runs untrusted code: an answer that is not what the protocol says ends that host
      const answer = parseAnswer(line);
      if (answer === undefined) {
        this.stderr = `${this.stderr}\nthe script host broke its protocol`.slice(-STDERR_KEPT);
        this.kill();
      } else {
        this.answers.push(answer);
      }
      this.wake?.();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
    });
    this.exited = new Promise((resolve) => {
      const ended = (code: number | null): void => {
        this.dead = true;
        resolve(code);
      };
      // 'close' comes after the answer stream has ended, so every answer the host wrote has been read by then
      child.on('close', ended);
      // a process that could not be spawned emits no exit
      child.on('error', () => ended(null));
    });
    void this.exited.then(() => this.wake?.());
  }

  /** What the host wrote to its standard error lately (print output, interpreter complaints). */
  get output(): string {
    return this.stderr;
  }

  send(value: unknown): void {
    (this.child.stdin as Writable).write(`${JSON.stringify(value)}\n`);
  }

  /** The next answer, or undefined when none came within `timeoutMs` or the host exited. */
  async next(timeoutMs: number): Promise<Answer | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const answer = this.answers.shift();
      if (answer !== undefined) return answer;
      const left = deadline - Date.now();
      if (left <= 0 || this.dead) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}

class PythonProcessor implements Processor {
  private host: ScriptHost | undefined;
  private restarts = 0;
  private closed = false;

  constructor(
    private readonly context: ComponentContext,
    private readonly role: 'transformer' | 'filter',
    private readonly limits: PythonLimits,
    private readonly sandbox: PythonSandbox,
    private readonly script: string,
    private readonly privateDir: string,
  ) {}

  /** Starts a script host and waits until its interpreter has compiled the script. */
  async start(): Promise<void> {
    const command = sandboxCommand(this.sandbox, { memoryLimitMb: this.limits.memoryLimitMb, privateDir: this.privateDir });
    const child = spawn(command.file, command.args, { env: command.env, cwd: this.privateDir, stdio: ['pipe', 'ignore', 'pipe', 'pipe'] });
    const host = new ScriptHost(child);
    host.send({ script: this.script, role: this.role, policy: this.sandbox.policy, pyodideDir: command.pyodideDir, readGrants: command.readGrants, mounts: command.mounts, split: command.split, writeGrant: this.privateDir });
    const ready = await host.next(START_TIMEOUT_MS);
    if (ready?.ready === true) {
      this.host = host;
      return;
    }
    host.kill();
    if (ready?.ready === false) throw new ScriptCompileError(this.context.name, ready.error ?? 'unknown error', 'Python');
    throw new ScriptHostError(`${this.context.name}: the Python script host did not start: ${lastLines(host.output) || 'no answer within the start time limit'}`);
  }

  async process(batch: readonly LoomMessage[]): Promise<readonly Outcome[]> {
    const outcomes: Outcome[] = [];
    while (outcomes.length < batch.length) {
      const rest = batch.slice(outcomes.length);
      outcomes.push(...(await this.run(rest)));
    }
    return outcomes;
  }

  /**
   * Runs messages on the current host until they are all answered, or until one is over its time
   * limit or takes the host down: that one fails, the host is replaced, and the caller goes on
   * with the rest. Answers at least one outcome.
   */
  private async run(messages: readonly LoomMessage[]): Promise<Outcome[]> {
    if (this.host === undefined) await this.restart();
    const host = this.host as ScriptHost;
    host.send({ messages: messages.map((message) => JSON.stringify(message.body)) });
    const outcomes: Outcome[] = [];
    for (const message of messages) {
      const answer = await host.next(this.limits.timeoutMs);
      if (answer === undefined || answer.i !== outcomes.length) {
        const exited = host.dead;
        if (host.child.exitCode === FATAL_EXIT && outcomes.length > 0) {
          // the interpreter answered the message that broke it, then stopped: the rest go to a new host
          this.host = undefined;
          return outcomes;
        }
        const reason = exited
          ? `the Python interpreter stopped (${lastLines(host.output) || `exit ${host.child.exitCode ?? host.child.signalCode}`})`
          : `the script ran longer than the time limit of ${this.limits.timeoutMs} ms`;
        this.context.logger.warn({ component: this.context.name, messageId: message.id, reason }, 'Python script host replaced');
        host.kill();
        this.host = undefined;
        outcomes.push(outcome.fail(reason));
        return outcomes;
      }
      outcomes.push(this.outcomeOf(message, answer));
    }
    return outcomes;
  }

  private outcomeOf(message: LoomMessage, answer: Answer): Outcome {
    if (answer.ok !== true) return outcome.fail(typeof answer.error === 'string' ? answer.error.slice(0, MAX_ERROR_LENGTH) : 'the script failed');
    if (this.role === 'filter') return answer.out === true ? outcome.emit(message) : outcome.none();
    if (answer.out === null || answer.out === undefined) return outcome.none();
    const body = typeof answer.out === 'string' ? jsonObject(answer.out) : undefined;
    if (body === undefined) return outcome.fail('the script host answered something that is not a message');
    return outcome.emit({ id: message.id, headers: message.headers, body });
  }

  private async restart(): Promise<void> {
    if (this.closed) throw new FailedPreconditionError(`${this.context.name} is closed`);
    this.restarts += 1;
    this.context.logger.info({ component: this.context.name, restarts: this.restarts }, 'starting a new Python script host');
    await this.start();
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

/** An answer line as the protocol has it, or undefined for anything else. */
function parseAnswer(line: string): Answer | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const answer = value as Answer;
  if (answer.ready === undefined && (typeof answer.i !== 'number' || typeof answer.ok !== 'boolean')) return undefined;
  return answer;
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function lastLines(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.includes('ExperimentalWarning') && !line.includes('--trace-warnings'))
    .slice(-2)
    .join(' | ');
}
