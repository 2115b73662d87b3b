import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditModule } from '@loom/audit';
import { loadConfig } from '@loom/config';
import { configStoreModule } from '@loom/config-store';
import { executorModule } from '@loom/executor';
import { schedulerModule } from '@loom/scheduler';
import { secretsModule } from '@loom/secrets';
import { startServeProcess } from '@loom/service-kit';
import { skillGatewayModule } from '@loom/skill-gateway';
import { createLogger } from '@loom/telemetry';
import { captureStream } from '@loom/testing';
import { type RunningConsole, startConsole } from '../src/index.js';

/** loom's six services and the console beside them, in this process, as `loom serve` composes them. */
export interface ConsoleHarness {
  /** The gRPC address of the services. */
  readonly address: string;
  readonly console: RunningConsole;
  readonly dataDirectory: string;
  /** Its JSON log entries so far. */
  logged(): Record<string, unknown>[];
  stop(): Promise<void>;
}

/**
 * Starts the six services on a free port and the console on another (`loom.console.port=0`), their state in a scratch
 * directory; `overrides` are `key=value` settings.
 */
export async function startConsoleHarness(overrides: readonly string[]): Promise<ConsoleHarness> {
  const dataDirectory = mkdtempSync(join(tmpdir(), 'loom-console-'));
  const log = captureStream();
  const settings = [
    'server.port=0',
    'loom.telemetry.prometheus.port=0',
    'loom.secrets.generateKeys=true',
    `loom.data.directory=${dataDirectory}`,
    'loom.console.port=0',
    ...overrides,
  ];
  const env = { PATH: process.env.PATH };
  const services = await startServeProcess([auditModule, secretsModule, skillGatewayModule, configStoreModule, executorModule, schedulerModule], {
    overrides: settings,
    env,
    logDestination: log.stream,
    registerTelemetry: false,
  });
  const config = loadConfig({ overrides: settings, env });
  const logger = createLogger({ level: config.log.level, base: { service: 'loom-console' }, destination: log.stream });
  let running: RunningConsole;
  try {
    running = await startConsole({ config, logger, grpcAddress: () => `127.0.0.1:${services.port}` });
  } catch (error) {
    await services.stop();
    throw error;
  }
  return {
    address: `127.0.0.1:${services.port}`,
    console: running,
    dataDirectory,
    logged: () => log.lines(),
    async stop() {
      await running.stop();
      await services.stop();
      rmSync(dataDirectory, { recursive: true, force: true });
    },
  };
}
