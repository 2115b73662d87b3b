import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { runCli, startLoom } from './loom-in-process.js';
import { loomMain } from './loom-process.js';

const registrationPaths: Record<string, string> = { annotation: '/v2/annotate', keywords: '/extractKeywords', 'web-data': '/extract', pdf: '/parse' };

describe('loom skills serve', () => {
  // the binary, in a process of its own: stopping on SIGTERM with exit code 0 is the point
  it('runs the skill services in one process, each healthy on its own port, and stops on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      ['--no-node-snapshot', loomMain, 'skills', 'serve', '--port', 'annotation=0', '--port', 'keywords=0', '--port', 'web-data=0', '--port', 'pdf=0'],
      {
        env: { PATH: process.env.PATH },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const urls = await new Promise<Record<string, string>>((resolve, reject) => {
      const found: Record<string, string> = {};
      createInterface({ input: child.stdout }).on('line', (line) => {
        const entry = JSON.parse(line) as { msg?: string; skill?: string; url?: string };
        if (entry.msg === 'skill service listening' && entry.skill !== undefined && entry.url !== undefined) found[entry.skill] = entry.url;
        if (Object.keys(found).length === 4) resolve(found);
      });
      void exited.then((code) => reject(new Error(`loom skills serve exited with ${code}`)));
    });
    expect(Object.keys(urls).sort()).toEqual(['annotation', 'keywords', 'pdf', 'web-data']);
    for (const [skill, url] of Object.entries(urls)) {
      const health = await fetch(`${url}/health`);
      expect(await health.json()).toMatchObject({ status: 'UP', skill });
      const openapi = (await (await fetch(`${url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
      expect(Object.keys(openapi.paths)).toContain(registrationPaths[skill]);
    }
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('loom serve --with-skills runs skill services beside loom, with their data in <loom.data.directory>/skills', async () => {
    const loom = await startLoom([
      '--services',
      'audit,skill-gateway',
      '--set',
      'loom.auth.allowAnonymous=true',
      '--with-skills',
      'keywords,web-data',
      '--skill-port',
      'keywords=0',
      '--skill-port',
      'web-data=0',
    ]);
    try {
      const listening = (): Array<{ skill: string; url: string }> =>
        loom.logLines
          .map((line) => JSON.parse(line) as { msg?: string; skill: string; url: string })
          .filter((entry) => entry.msg === 'skill service listening');
      await expect
        .poll(() =>
          listening()
            .map((entry) => entry.skill)
            .sort(),
        )
        .toEqual(['keywords', 'web-data']);
      for (const entry of listening()) expect((await fetch(`${entry.url}/health`)).status).toBe(200);
      // loom health asks each skill where it publishes its health: web data, registered at /extract, at /health (issue 36)
      const health = await runCli(['health', '--address', loom.address, '--output', 'json']);
      const skills = (JSON.parse(health.stdout) as { skills: { skill: string; reachable: boolean; detail: string }[] }).skills;
      expect(skills.map(({ skill, reachable, detail }) => [skill, reachable, detail])).toEqual([
        ['keywords', true, 'GET /health answered 200'],
        ['web-data', true, 'GET /health answered 200'],
      ]);
    } finally {
      // stops cleanly, loom and its skills: what exit code 0 after SIGTERM told of the binary
      await loom.stop();
    }
  });

  it('refuses an unknown skill and a bad setting with exit code 2', async () => {
    const unknown = await runCli(['skills', 'serve', '--only', 'annotation-x']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("unknown skill 'annotation-x'");
    const bad = await runCli(['skills', 'serve', '--only', 'keywords'], { env: { SKILL_LIMITS_CONCURRENCY: 'lots' } });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('SKILL_LIMITS_CONCURRENCY');
  });
});
