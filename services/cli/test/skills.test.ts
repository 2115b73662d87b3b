import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { loomMain, runLoom } from './loom-process.js';

describe('loom skills serve', () => {
  it('runs the skill services in one process, each healthy on its own port, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--no-node-snapshot', loomMain, 'skills', 'serve', '--port', 'keywords=0', '--port', 'web-data=0', '--port', 'pdf=0'], {
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const urls = await new Promise<Record<string, string>>((resolve, reject) => {
      const found: Record<string, string> = {};
      createInterface({ input: child.stdout }).on('line', (line) => {
        const entry = JSON.parse(line) as { msg?: string; skill?: string; url?: string };
        if (entry.msg === 'skill service listening' && entry.skill !== undefined && entry.url !== undefined) found[entry.skill] = entry.url;
        if (Object.keys(found).length === 3) resolve(found);
      });
      void exited.then((code) => reject(new Error(`loom skills serve exited with ${code}`)));
    });
    expect(Object.keys(urls).sort()).toEqual(['keywords', 'pdf', 'web-data']);
    for (const [skill, url] of Object.entries(urls)) {
      const health = await fetch(`${url}/health`);
      expect(await health.json()).toMatchObject({ status: 'UP', skill });
      const openapi = (await (await fetch(`${url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
      expect(Object.keys(openapi.paths)).toHaveLength(1);
    }
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses an unknown skill and a bad setting with exit code 2', () => {
    const unknown = runLoom(['skills', 'serve', '--only', 'annotation-x']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("unknown skill 'annotation-x'");
    const bad = runLoom(['skills', 'serve', '--only', 'keywords'], { SKILL_LIMITS_CONCURRENCY: 'lots' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('SKILL_LIMITS_CONCURRENCY');
  });
});
