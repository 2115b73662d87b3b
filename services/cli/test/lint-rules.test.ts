import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { ESLint } from 'eslint';
import * as prettier from 'prettier';
import tseslint from 'typescript-eslint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

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
      'deploy/test/probe.test.ts',
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
    // the format check runs before nx runs any project's tests: on its lane before the first tests, and before the
    // other lane's, which wait for the pool the build makes possible
    const runner = readFileSync(join(root, 'scripts', 'test.mjs'), 'utf8');
    expect(runner).toContain("'nx', 'run-many', '-t', 'test'");
    const formatCheck = runner.indexOf("await step('npm', ['run', 'format:check']");
    expect(formatCheck).toBeGreaterThan(-1);
    expect(formatCheck).toBeLessThan(runner.indexOf('poolStarted();'));
    expect(formatCheck).toBeLessThan(runner.indexOf('runTests(plan.early)'));
    expect(runner.indexOf('await poolReady;')).toBeLessThan(runner.indexOf('runLane(plan.lanes[0])'));
    expect(scripts['format:check']).toContain('prettier --check');
    const filepath = join(root, 'services/executor/src/probe.ts');
    const options = { ...(await prettier.resolveConfig(filepath)), filepath };
    expect(await prettier.check('export const probe = { a: 1,b:2 }\n', options)).toBe(false);
    expect(await prettier.check(await prettier.format('export const probe = { a: 1,b:2 }\n', options), options)).toBe(true);
  });
});

/** Writes `files` (path relative to `dir` → contents) under `dir`, making their folders. */
function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

/** A workspace package of the fixture: its sources reached through the export condition "@loom/source", as ours are. */
function fixturePackage(name: string): string {
  return `${JSON.stringify({ name, type: 'module', exports: { '.': { '@loom/source': './src/index.ts', default: './dist/index.js' } } })}\n`;
}

describe('the import-cycle lint', () => {
  // the fixtures are files on disk (no-cycle reads the imported files), inside the repository so that its config applies,
  // under .loom/ (ignored by git, walked by no package's lint)
  let fixtures = '';

  beforeAll(() => {
    mkdirSync(join(root, '.loom'), { recursive: true });
    fixtures = mkdtempSync(join(root, '.loom', 'lint-fixture-'));
    writeFiles(fixtures, {
      'cycle/package.json': fixturePackage('@loom/lint-fixture-cycle'),
      'cycle/src/a.ts': "import { b } from './b.js';\nexport const a = (): number => b() + 1;\n",
      'cycle/src/b.ts': "import { a } from './a.js';\nexport const b = (): number => (Math.random() > 2 ? a() : 0);\n",
      'acyclic/package.json': fixturePackage('@loom/lint-fixture-acyclic'),
      'acyclic/src/c.ts': "import { d } from './d.js';\nexport const c = (): number => d() + 1;\n",
      'acyclic/src/d.ts': "import { type C } from './types.js';\nexport const d = (): number => 1;\nexport type D = C;\n",
      // a type-only import erases at compile time: no cycle at run time
      'acyclic/src/types.ts': "import { type c } from './c.js';\nexport type C = typeof c;\n",
      'upper/package.json': fixturePackage('@loom/lint-fixture-upper'),
      'upper/src/index.ts': "import { lower } from '@loom/lint-fixture-lower';\nexport const upper = (): number => lower() + 1;\n",
      'lower/package.json': fixturePackage('@loom/lint-fixture-lower'),
      'lower/src/index.ts': "import { upper } from '@loom/lint-fixture-upper';\nexport const lower = (): number => (Math.random() > 2 ? upper() : 0);\n",
    });
    // npm's workspaces link each package into node_modules; so do these
    mkdirSync(join(fixtures, 'node_modules', '@loom'), { recursive: true });
    for (const name of ['upper', 'lower']) symlinkSync(join('..', '..', name), join(fixtures, 'node_modules', '@loom', `lint-fixture-${name}`));
  });

  afterAll(() => {
    if (fixtures !== '') rmSync(fixtures, { recursive: true, force: true });
  });

  /** Lints the fixture's folder `folder` with the repository's config (without type information): each file's import-x/no-cycle messages. */
  async function cycles(folder: string): Promise<Record<string, string[]>> {
    const eslint = new ESLint({ cwd: root, overrideConfig: [tseslint.configs.disableTypeChecked] });
    const results = await eslint.lintFiles([join(fixtures, folder)]);
    return Object.fromEntries(
      results.map((result) => [relative(fixtures, result.filePath), result.messages.map((message) => `${message.ruleId ?? 'parse'}: ${message.message}`)]),
    );
  }

  it('refuses two files of one package that import each other', async () => {
    expect(await cycles('cycle')).toEqual({
      'cycle/src/a.ts': ['import-x/no-cycle: Dependency cycle detected'],
      'cycle/src/b.ts': ['import-x/no-cycle: Dependency cycle detected'],
    });
  });

  it('refuses two workspace packages that import each other by name, through their sources', async () => {
    expect(await cycles('upper')).toEqual({ 'upper/src/index.ts': ['import-x/no-cycle: Dependency cycle detected'] });
    expect(await cycles('lower')).toEqual({ 'lower/src/index.ts': ['import-x/no-cycle: Dependency cycle detected'] });
  });

  it('lets imports that go one way through, and a type-only import back', async () => {
    expect(await cycles('acyclic')).toEqual({ 'acyclic/src/c.ts': [], 'acyclic/src/d.ts': [], 'acyclic/src/types.ts': [] });
  });
});

/** A floor of the lint's table (eslint.config.mjs, FLOORS). */
interface Floor {
  name: string;
  packages: string[];
}

/** The floors and the workspace packages, as the lint reads them. */
async function lintTables(): Promise<{ floors: Floor[]; packages: { folder: string; name: string }[] }> {
  const config = (await import(pathToFileURL(join(root, 'eslint.config.mjs')).href)) as {
    FLOORS: Floor[];
    workspacePackages(): { folder: string; name: string }[];
  };
  return { floors: config.FLOORS, packages: config.workspacePackages() };
}

describe('the floors', () => {
  it('hold every workspace package, each on one floor', async () => {
    const { floors, packages } = await lintTables();
    const placed = floors.flatMap((floor) => floor.packages);
    expect([...placed].sort()).toEqual(packages.map(({ name }) => name).sort());
    expect(new Set(placed).size).toBe(placed.length);
  });

  it('hold every package.json: a package depends on lower floors only, a service on another service only to compose it in its tests', async () => {
    const { floors, packages } = await lintTables();
    const floorOf = (name: string): number => floors.findIndex((floor) => floor.packages.includes(name));
    const services = floors.find((floor) => floor.name === 'services')!.packages;
    const upward: string[] = [];
    for (const { folder, name } of packages) {
      const manifest = JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
      for (const field of ['dependencies', 'devDependencies']) {
        for (const dependency of Object.keys(manifest[field] ?? {}).filter((key) => key.startsWith('@loom/'))) {
          const composed = field === 'devDependencies' && services.includes(name) && services.includes(dependency);
          if (floorOf(dependency) >= floorOf(name) && !composed) upward.push(`${name} (${field}) -> ${dependency}`);
        }
      }
    }
    expect(upward).toEqual([]);
  });

  it('are drawn in docs/architecture.md as the lint has them', async () => {
    const { floors } = await lintTables();
    const page = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
    const rows = [...page.matchAll(/^\| (\d+) ([\w-]+) \| ([^|]+) \|/gm)].map((row) => ({
      floor: Number(row[1]),
      name: row[2],
      packages: [...row[3]!.matchAll(/`(@loom\/[\w-]+)`/g)].map((name) => name[1]),
    }));
    expect(rows).toEqual(floors.map((floor, index) => ({ floor: index, name: floor.name, packages: floor.packages })));
  });

  it('refuse an import of the own floor or above, in sources and tests, and let one of a lower floor through', async () => {
    const refused = [
      ['libs/foundation/src/probe.ts', '@loom/domain'],
      ['libs/foundation/test/probe.test.ts', '@loom/testing'],
      ['libs/domain/src/probe.ts', '@loom/telemetry'],
      ['libs/domain/src/probe.ts', '@loom/postgres'],
      ['libs/nlp/src/probe.ts', '@loom/nlp-training'],
      ['libs/postgres/test/probe.test.ts', '@loom/graph/testing'],
      ['libs/postgres/src/probe.ts', '@loom/service-kit'],
      ['libs/service-kit/src/probe.ts', '@loom/executor'],
      ['libs/testing/src/probe.ts', '@loom/cli'],
      ['services/executor/test/harness.ts', '@loom/cli'],
      ['services/cli/src/probe.ts', '@loom/deploy'],
    ];
    for (const [path, specifier] of refused) {
      expect(await lint(path!, `import { probe as imported } from '${specifier}';\nexport const probe = imported;\n`), `${path} ${specifier}`).toEqual([
        expect.stringMatching(/^no-restricted-imports: .*stands on floor \d \(\w+\): it imports packages of lower floors only/),
      ]);
    }
    const allowed = [
      ['libs/domain/src/probe.ts', '@loom/foundation'],
      ['libs/telemetry/src/probe.test.ts', '@loom/testing'],
      ['libs/graph/src/probe.ts', '@loom/postgres'],
      ['libs/nlp-training/src/probe.ts', '@loom/nlp'],
      ['libs/nlp/test/probe.test.ts', '@loom/nlp'],
      ['services/skills/annotation/src/probe.ts', '@loom/nlp'],
      ['services/cli/src/probe.ts', '@loom/executor'],
      ['deploy/test/probe.test.ts', '@loom/cli'],
    ];
    for (const [path, specifier] of allowed) {
      expect(await lint(path!, `import { probe as imported } from '${specifier}';\nexport const probe = imported;\n`), `${path} ${specifier}`).toEqual([]);
    }
  });

  it('refuse gRPC in the ground floor, the domain main entry, the HTTP skills and their kit; the proto conversion and the gRPC services may load it', async () => {
    const grpcFree = [
      'libs/foundation/src/probe.ts',
      'libs/domain/src/probe.ts',
      'libs/skill-service-kit/src/probe.ts',
      'services/skills/keywords/src/probe.ts',
      'services/skills/pdf/test/harness.ts',
      'services/skills/web-data/test/probe.test.ts',
    ];
    for (const path of grpcFree) {
      for (const specifier of ['@grpc/grpc-js', 'node:http2', '@loom/contracts', '@loom/domain/proto', '@loom/telemetry/grpc']) {
        const messages = await lint(path, `import { probe as imported } from '${specifier}';\nexport const probe = imported;\n`);
        expect(messages, `${path} ${specifier}`).toEqual([expect.stringMatching(/^no-restricted-imports: .*@loom\/[\w-]+ (loads no gRPC|stands on floor \d)/)]);
      }
    }
    const code = "import { probe as imported } from '@loom/contracts';\nexport const probe = imported;\n";
    for (const path of [
      'libs/domain/src/workflow-proto.ts',
      'libs/domain/test/probe.test.ts',
      'services/executor/src/probe.ts',
      'services/skill-gateway/src/probe.ts',
    ]) {
      expect(await lint(path, code), path).toEqual([]);
    }
    expect(await lint('services/executor/src/probe.ts', "import { probe as imported } from '@loom/domain/proto';\nexport const probe = imported;\n")).toEqual(
      [],
    );
  });
});
