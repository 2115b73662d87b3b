import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowStoreClient } from '@loom/contracts';
import { workflowFromProto, workflowToProto } from '@loom/domain/proto';
import { call, createClient, type RunningServices } from '@loom/service-kit';
import { serveForTest, type ServiceProcess, startServiceProcess } from '@loom/service-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditModule, graphWorkflow, overridesFor, scratch, secretsModule, storedFiles, storeToken } from './harness.js';

/** The built config store (its test target builds it first), run alone the way a split deployment does. */
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const ROUNDS = 20;
const WRITERS = 3;

function kill(child: ServiceProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.process.exitCode !== null || child.process.signalCode !== null) {
      resolve();
      return;
    }
    child.process.once('exit', () => resolve());
    child.process.kill('SIGKILL');
  });
}

/** The last acknowledged push of each workflow: its version and the marker its content carries. */
type Acknowledged = Map<string, { version: number; marker: string }>;

function markedWorkflow(name: string, marker: string) {
  const workflow = graphWorkflow(name, 'crash-test-password');
  for (const component of workflow.components) {
    for (const option of component.options) if (option.name === 'query') option.value = `RETURN '${marker}' AS marker`;
  }
  return workflow;
}

function markerOf(workflow: ReturnType<typeof workflowFromProto>): string | undefined {
  const query = workflow.components.flatMap((component) => component.options).find((option) => option.name === 'query')?.value;
  return typeof query === 'string' ? /RETURN '(.*)' AS marker/.exec(query)?.[1] : undefined;
}

describe('config store under SIGKILL', () => {
  const dirs = scratch();
  let secrets: RunningServices;

  beforeAll(async () => {
    secrets = await serveForTest([secretsModule, auditModule], overridesFor(dirs));
  });
  afterAll(() => secrets.stop());

  it(`keeps every acknowledged push and never shows a torn file (${ROUNDS} rounds)`, { timeout: 240_000 }, async () => {
    const overrides = overridesFor(dirs, [
      `loom.services.secrets.address=127.0.0.1:${secrets.port}`,
      `loom.services.audit.address=127.0.0.1:${secrets.port}`,
      `loom.auth.tokens.config-store=${storeToken}`,
      'loom.auth.allowAnonymous=true',
      'server.port=0',
      'loom.telemetry.prometheus.port=0',
    ]);
    const acknowledged: Acknowledged = new Map();
    let pushes = 0;

    const verify = async (address: string): Promise<void> => {
      const client = createClient(WorkflowStoreClient, address, { retry: false });
      try {
        const { workflows } = await call(client, 'listWorkflows', { pageSize: 1000, pageToken: '' });
        expect(workflows.filter((workflow) => !workflow.valid)).toEqual([]);
        for (const [name, ack] of acknowledged) {
          const { workflow, metadata } = await call(client, 'getWorkflow', { name });
          expect(metadata?.version, name).toBeGreaterThanOrEqual(ack.version);
          if (metadata?.version === ack.version && workflow !== undefined) expect(markerOf(workflowFromProto(workflow)), name).toBe(ack.marker);
        }
      } finally {
        client.close();
      }
      // a restarted store has removed the temp files of cut-off writes (a kept version's are removed at its next push);
      // every other file, kept versions too, is whole JSON
      for (const file of existsSync(dirs.workflows) ? storedFiles(dirs.workflows) : []) {
        if (file.startsWith('.history') && file.endsWith('.tmp')) continue;
        expect(file.endsWith('.tmp'), file).toBe(false);
        expect(() => JSON.parse(readFileSync(join(dirs.workflows, file), 'utf8')) as unknown, file).not.toThrow();
      }
    };

    for (let round = 0; round < ROUNDS; round++) {
      const child = await startServiceProcess(MAIN, overrides);
      if (round > 0) await verify(child.address);
      const client = createClient(WorkflowStoreClient, child.address, { retry: false, deadlineMs: 5000 });
      let stopped = false;
      let acknowledgedThisRound = 0;
      const writers = Array.from({ length: WRITERS }, async (_, writer) => {
        const name = `Crash writer ${writer}_${String(writer).padStart(8, '0')}-0000-4000-8000-000000000000`;
        for (let attempt = 0; !stopped; attempt++) {
          const marker = `round ${round} push ${attempt}`;
          try {
            const { summary } = await call(client, 'putWorkflow', { workflow: workflowToProto(markedWorkflow(name, marker)) });
            if (summary !== undefined) acknowledged.set(name, { version: summary.version, marker });
            pushes++;
            acknowledgedThisRound++;
          } catch {
            return; // the process is gone: this push was never acknowledged
          }
        }
      });
      // the kill lands at a random moment once pushes are flowing (a slow machine may take a while for the first)
      for (let waited = 0; acknowledgedThisRound === 0 && waited < 20_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 450));
      await kill(child);
      stopped = true;
      await Promise.all(writers);
      client.close();
    }

    const last = await startServiceProcess(MAIN, overrides);
    try {
      await verify(last.address);
    } finally {
      await kill(last);
    }
    expect(acknowledged.size).toBeGreaterThan(0);
    console.log(`config store crash test: ${ROUNDS} SIGKILLs, ${pushes} acknowledged pushes, all present`);
  });
});
