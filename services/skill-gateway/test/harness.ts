import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SkillGatewayClient } from '@loom/contracts';
import { createClient, type RunningServices } from '@loom/service-kit';
import { capturedLogger, serveForTest } from '@loom/service-kit/testing';
import { createSkillGatewayInstance, type SkillGatewayTestHooks, skillGatewayModule } from '../src/index.js';

/** A running gateway and a client to it. */
export interface GatewayHarness {
  readonly running: RunningServices;
  readonly client: SkillGatewayClient;
  readonly logLines: string[];
  stop(): Promise<void>;
}

/** Starts the skill gateway alone on a free port: over its own embedded PostgreSQL unless the overrides name a database. */
export async function startGateway(overrides: readonly string[] = [], hooks: SkillGatewayTestHooks = {}): Promise<GatewayHarness> {
  const root = mkdtempSync(join(tmpdir(), 'loom-skills-'));
  const { logger, lines } = capturedLogger();
  const module: typeof skillGatewayModule = { ...skillGatewayModule, create: (context) => createSkillGatewayInstance(context, hooks) };
  const running = await serveForTest([module], [`loom.embedded.postgres.dataDir=${join(root, 'pgdata')}`, ...overrides], { logger }).catch((error: unknown) => {
    rmSync(root, { recursive: true, force: true });
    throw error;
  });
  const client = createClient(SkillGatewayClient, `127.0.0.1:${running.port}`, { retry: false });
  let stopped = false;
  return {
    running,
    client,
    logLines: lines,
    async stop() {
      if (stopped) return;
      stopped = true;
      client.close();
      await running.stop();
      // its own embedded PostgreSQL's data (tests that restart on a database pass their own in the overrides)
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** A fresh database on the real PostgreSQL server, and how to drop it. */
export { createScratchDatabase as freshDatabase } from '@loom/postgres/testing';
