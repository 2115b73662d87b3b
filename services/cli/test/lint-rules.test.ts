import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { ESLint } from 'eslint';
import * as prettier from 'prettier';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Lints `code` as if it were the file at `path` (relative to the repository) with the repository's config, without type information. */
async function lint(path: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: root, overrideConfig: [tseslint.configs.disableTypeChecked] });
  const [result] = await eslint.lintText(code, { filePath: join(root, path) });
  return (result?.messages ?? []).map((message) => `${message.ruleId ?? 'parse'}: ${message.message}`);
}

describe('the lint rules', () => {
  it("refuse a service importing another service's code, in its sources and its tests", async () => {
    for (const path of ['services/executor/src/probe.ts', 'services/executor/test/probe.test.ts', 'services/skills/keywords/src/probe.ts']) {
      const messages = await lint(path, "import { auditModule } from '@loom/audit';\nexport const probe = auditModule;\n");
      expect(messages, path).toEqual([expect.stringMatching(/^no-restricted-imports: .*it may not import another service's code/)]);
    }
    const deep = await lint(
      'services/secrets/src/probe.ts',
      "import { skillGatewayModule } from '@loom/skill-gateway/testing';\nexport const probe = skillGatewayModule;\n",
    );
    expect(deep).toEqual([expect.stringMatching(/^no-restricted-imports: /)]);
  });

  it('let libraries, the CLI and the declared test harnesses compose services', async () => {
    const code = "import { auditModule } from '@loom/audit';\nexport const probe = auditModule;\n";
    expect(await lint('services/cli/src/probe.ts', code)).toEqual([]);
    expect(await lint('services/executor/test/harness.ts', code)).toEqual([]);
    expect(await lint('services/executor/src/probe.ts', "import { createPool } from '@loom/postgres';\nexport const probe = createPool;\n")).toEqual([]);
  });

  it('refuse the gRPC service kit in the HTTP skills, their harnesses and the skill kit; @loom/foundation is theirs', async () => {
    for (const path of ['services/skills/annotation/src/probe.ts', 'services/skills/pdf/test/harness.ts', 'libs/skill-service-kit/src/probe.ts']) {
      for (const specifier of ['@loom/service-kit', '@loom/service-kit/testing']) {
        const messages = await lint(path, `import { probe as kit } from '${specifier}';\nexport const probe = kit;\n`);
        expect(messages, `${path} ${specifier}`).toEqual([expect.stringMatching(/^no-restricted-imports: .*from @loom\/foundation/)]);
      }
      expect(await lint(path, "import { Lifecycle } from '@loom/foundation';\nexport const probe = Lifecycle;\n"), path).toEqual([]);
    }
    expect(await lint('services/executor/src/probe.ts', "import { LoomServer } from '@loom/service-kit';\nexport const probe = LoomServer;\n")).toEqual([]);
  });

  it('refuse the helpers of @loom/foundation through the gRPC service kit, everywhere: they have one way in', async () => {
    for (const path of [
      'services/executor/src/probe.ts',
      'services/scheduler/test/probe.test.ts',
      'services/cli/src/probe.ts',
      'libs/postgres/src/probe.ts',
      'bench/probe.mjs',
    ]) {
      for (const name of ['Lifecycle', 'ShutdownOnce', 'KeyedLock', 'restartDelayMs', 'writeFileAtomic']) {
        const messages = await lint(path, `import { ${name} } from '@loom/service-kit';\nexport const probe = ${name};\n`);
        expect(messages, `${path} ${name}`).toEqual([expect.stringMatching(/^no-restricted-imports: .*Import it from @loom\/foundation/)]);
      }
      expect(await lint(path, "import { Lifecycle } from '@loom/foundation';\nexport const probe = Lifecycle;\n"), path).toEqual([]);
      expect(await lint(path, "import { call } from '@loom/service-kit';\nexport const probe = call;\n"), path).toEqual([]);
    }
  });

  it('refuse unformatted code: npm test checks the format with the repository prettier config first', async () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['test']).toBe('node scripts/test.mjs');
    // the format check runs before nx runs any project
    const runner = readFileSync(join(root, 'scripts', 'test.mjs'), 'utf8');
    const formatCheck = runner.indexOf("step('npm', ['run', 'format:check']");
    expect(formatCheck).toBeGreaterThan(-1);
    expect(formatCheck).toBeLessThan(runner.indexOf("step('npx', ['nx', 'run-many'"));
    expect(scripts['format:check']).toContain('prettier --check');
    const filepath = join(root, 'services/executor/src/probe.ts');
    const options = { ...(await prettier.resolveConfig(filepath)), filepath };
    expect(await prettier.check('export const probe = { a: 1,b:2 }\n', options)).toBe(false);
    expect(await prettier.check(await prettier.format('export const probe = { a: 1,b:2 }\n', options), options)).toBe(true);
  });
});
