import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListenError } from '@loom/foundation';
import { createLogger } from '@loom/telemetry';
import { DEFAULT_SKILL_SETTINGS, serveSkills, type SkillModule } from '../src/index.js';

let blocker: Server;
let taken: number;
beforeAll(async () => {
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  taken = (blocker.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => blocker.close(resolve));
});

/** A skill module whose service answers nothing but /health, on `hostPort`. */
function module(name: string, hostPort: number): SkillModule {
  return {
    name,
    defaultPort: hostPort,
    hostPort,
    registrationPath: '/',
    capability: 'KEYWORD_EXTRACTION',
    create: () => Promise.resolve({ name, title: name, description: 'test skill', version: '1.0.0', routes: [] }),
  };
}

describe('serveSkills on a port it cannot bind', () => {
  // a failed server was stopped a second time with the started ones, whose lifecycle error hid this one
  it('throws the listen error, a ListenError naming SERVER_PORT by default, when a later module cannot listen', async () => {
    const failure = serveSkills([module('first', 0), module('second', taken)], {
      settings: { ...DEFAULT_SKILL_SETTINGS, host: '127.0.0.1' },
      logger: createLogger({ level: 'silent' }),
      portOf: (candidate) => candidate.hostPort,
    });
    await expect(failure).rejects.toBeInstanceOf(ListenError);
    await expect(failure).rejects.toThrow(`SERVER_PORT ${taken} is in use (EADDRINUSE): set SERVER_PORT to a free port`);
  });

  it("names the caller's setting when it gives one", async () => {
    const failure = serveSkills([module('alone', taken)], {
      settings: { ...DEFAULT_SKILL_SETTINGS, host: '127.0.0.1' },
      logger: createLogger({ level: 'silent' }),
      portSettingOf: (candidate) => `--port ${candidate.name}`,
    });
    await expect(failure).rejects.toMatchObject({ setting: '--port alone', port: taken, code: 'EADDRINUSE' });
  });
});
