import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ExecutorClient, WorkflowState } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
export { freeLoopbackPort as freePort } from '@loom/service-kit/testing';

/** A started loom process (`serve`), its JSON log lines kept for assertions. */
export interface ServiceProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logLines: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a process and resolves once it logs `ready` ('loom listening' by default); rejects with its stderr if it exits first. */
export async function startService(
  name: string,
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; ready?: string },
): Promise<ServiceProcess> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const logLines: string[] = [];
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      logLines.push(line);
      if (line.includes(`"msg":"${options.ready ?? 'loom listening'}"`)) resolve();
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`${name} exited (${code ?? signal}) before listening: ${stderr.join('')}${logLines.slice(-5).join('\n')}`)),
    );
  });
  return { name, child, logLines, exited };
}

/** Stops a process with a signal (idempotent) and waits for its exit. */
export async function stopService(
  service: ServiceProcess,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill(signal);
  return service.exited;
}

/** Runs a command without blocking this process (whose children keep logging), returning its output. */
export async function runAsync(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  child.stdin.end(options.input ?? '');
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { status, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') };
}

/** Polls `check` until it returns a value (not undefined), at most `deadlineMs`; the last error is reported. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, deadlineMs = 120_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > end) throw new Error(`${what}: not reached within ${deadlineMs} ms${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** How many messages a workflow's component has passed on, asked over gRPC (polling through the CLI would start a process per poll). */
export async function messagesOut(address: string, token: string, workflow: string, componentPrefix: string): Promise<number> {
  const client = createClient(ExecutorClient, address, { token, deadlineMs: 10_000 });
  try {
    const status = await call(client, 'getWorkflowStatus', { name: workflow });
    return Number(status.components.find((component) => component.name.startsWith(componentPrefix))?.messagesOut ?? -1);
  } finally {
    client.close();
  }
}

/**
 * Starts a workflow over gRPC with a deadline for a loaded machine: the first start opens the
 * executor's embedded graph, which can take longer than the CLI's 30 s default on a busy CI host.
 */
export async function startWorkflow(address: string, token: string, workflow: string): Promise<void> {
  const client = createClient(ExecutorClient, address, { token, deadlineMs: 180_000 });
  try {
    await call(client, 'startWorkflow', { name: workflow }, { deadlineMs: 180_000 });
  } finally {
    client.close();
  }
}

/**
 * Waits until the executor runs the workflow again without being asked: with messaging configured, a restarted
 * executor starts every workflow the cluster still marks RUNNING (issue 35).
 */
export async function runningAgain(address: string, token: string, workflow: string): Promise<void> {
  const client = createClient(ExecutorClient, address, { token, deadlineMs: 30_000 });
  try {
    await eventually(`${workflow} RUNNING again after the restart`, async () => {
      // its own part, not the whole: the killed executor's part still shows RUNNING until its report expires
      const status = await call(client, 'getWorkflowStatus', { name: workflow }).catch(() => undefined);
      const own = status?.executors.find((part) => part.executorId === status.executorId);
      return own?.state === WorkflowState.WORKFLOW_STATE_RUNNING ? true : undefined;
    });
  } finally {
    client.close();
  }
}
