import { createLogger, type Logger } from '@loom/telemetry';
import { type SkillModule } from './skill-module.js';
import { SkillServer } from './skill-server.js';
import { DEFAULT_SKILL_SETTINGS, type SkillSettings } from './skill-settings.js';

/** Settings for tests: loopback, a free port, the given changes. */
export function testSkillSettings(changes: Partial<SkillSettings> = {}): SkillSettings {
  return { ...DEFAULT_SKILL_SETTINGS, host: '127.0.0.1', port: 0, logLevel: 'silent', ...changes };
}

/** Builds a skill module's service and starts it on `127.0.0.1:0`; stop it in `afterEach`. */
export async function startSkillForTest(
  module: SkillModule,
  changes: Partial<SkillSettings> = {},
  logger: Logger = createLogger({ level: 'silent' }),
): Promise<SkillServer> {
  const settings = testSkillSettings(changes);
  const definition = await module.create({ settings, logger });
  const server = new SkillServer(definition, {
    host: settings.host,
    port: 0,
    limits: settings.limits,
    shutdownDeadlineMs: settings.shutdownDeadlineMs,
    logger,
  });
  try {
    await server.start();
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

/** POSTs JSON to a running skill; answers status and parsed body. */
export async function postJson(
  server: SkillServer,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown), headers: response.headers };
}
