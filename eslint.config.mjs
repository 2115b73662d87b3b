import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import globals from 'globals';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import tseslint from 'typescript-eslint';

const root = dirname(fileURLToPath(import.meta.url));

/** Every service package (a folder of services/ or services/skills/ with a package.json): its folder and name. */
function servicePackages() {
  const folders = ['services', 'services/skills'].flatMap((parent) =>
    readdirSync(join(root, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && existsSync(join(root, parent, entry.name, 'package.json')))
      .map((entry) => `${parent}/${entry.name}`),
  );
  return folders.map((folder) => ({ folder, name: JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8')).name }));
}

const PACKAGE_BY_INDEX = { group: ['@loom/*/src/*', '**/libs/*/src/*', '**/services/*/src/*'], message: 'Import a package by its name and its index.' };

/**
 * A service depends on libs and contracts, never on another service's code (DESIGN.md). Code that
 * composes services on purpose is exempt: the CLI (it runs them all) and each service's declared
 * test helper, test/harness.ts, through which its tests start the services they need.
 */
const COMPOSERS = ['services/cli/**', 'services/*/test/harness.ts', 'services/skills/*/test/harness.ts'];

/**
 * The HTTP skills and their kit build on @loom/foundation, never on the gRPC service kit (grpc-js, auth, identity):
 * a skill is a small HTTP service and loads none of that.
 */
const NOT_THE_GRPC_KIT = {
  group: ['@loom/service-kit', '@loom/service-kit/*'],
  message:
    'HTTP skills and @loom/skill-service-kit do not import the gRPC service kit: take lifecycles, atomic files, locks and backoff from @loom/foundation.',
};

/**
 * Every name libs/foundation/src/index.ts exports (`export * from './x.js'` of declarations in x.ts), read from its sources
 * so that the rule below follows the library.
 */
function foundationExports() {
  const source = join(root, 'libs/foundation/src');
  const modules = [...readFileSync(join(source, 'index.ts'), 'utf8').matchAll(/^export \* from '\.\/(.+)\.js';$/gm)].map((match) => match[1]);
  return modules.flatMap((module) =>
    [
      ...readFileSync(join(source, `${module}.ts`), 'utf8').matchAll(
        /^export (?:declare )?(?:abstract )?(?:async )?(?:class|function|interface|type|const|let|enum) (\w+)/gm,
      ),
    ].map((match) => match[1]),
  );
}

/** Lifecycles, shutdown once, atomic files, the keyed lock, backoff and the stream channel have one way in: @loom/foundation, not the gRPC kit. */
const FOUNDATION_THROUGH_THE_KIT = {
  name: '@loom/service-kit',
  importNames: foundationExports(),
  message: 'Import it from @loom/foundation: the gRPC service kit does not re-export lifecycles, atomic files, locks, backoff or the stream channel.',
};
const HTTP_SKILL_FILES = ['services/skills/**/*.ts', 'services/skills/**/*.mjs', 'libs/skill-service-kit/**/*.ts', 'libs/skill-service-kit/**/*.mjs'];
const serviceBoundaries = servicePackages()
  .filter(({ folder }) => folder !== 'services/cli')
  .map(({ folder, name }) => {
    const others = servicePackages()
      .filter((other) => other.name !== name)
      .map((other) => other.name);
    return {
      files: [`${folder}/**/*.ts`, `${folder}/**/*.mjs`],
      ignores: COMPOSERS,
      rules: {
        'no-restricted-imports': [
          'error',
          {
            paths: [FOUNDATION_THROUGH_THE_KIT],
            patterns: [
              PACKAGE_BY_INDEX,
              {
                group: others.flatMap((other) => [other, `${other}/*`]),
                message: `${name} is a service: it may not import another service's code. Call it over gRPC, or compose services in test/harness.ts.`,
              },
              ...(folder.startsWith('services/skills/') ? [NOT_THE_GRPC_KIT] : []),
            ],
          },
        ],
      },
    };
  });

/**
 * How import-x finds the file behind an import, so that import-x/no-cycle follows real edges, across packages too.
 * A workspace package resolves to its TypeScript sources through the export condition "@loom/source" (as tsc and
 * vitest do), a `.js` specifier inside a package to its `.ts` file (NodeNext style); the `.ts` extensions and the
 * TypeScript parser are needed too, or import-x treats the resolved file as unparsable and follows nothing.
 */
const IMPORT_RESOLUTION = {
  'import-x/resolver-next': [
    createTypeScriptImportResolver({
      project: join(root, 'tsconfig.base.json'),
      conditionNames: ['@loom/source', 'types', 'import', 'node', 'default'],
    }),
  ],
  'import-x/extensions': ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'],
  'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.mts', '.cts'] },
  'import-x/external-module-folders': ['node_modules', 'node_modules/@types'],
  // a workspace package is ours, though it lies outside the importing package: no-cycle's ignoreExternal skips the
  // rest, which keeps it cheap (33 s -> 4 s of the executor's lint) and cannot hide a cycle of ours
  'import-x/internal-regex': '^@loom/',
};

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', '**/src/generated/**', '**/descriptor/**', '.nx/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true },
    },
    plugins: { 'import-x': importX },
    settings: IMPORT_RESOLUTION,
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'no-restricted-imports': ['error', { paths: [FOUNDATION_THROUGH_THE_KIT], patterns: [PACKAGE_BY_INDEX] }],
      'no-restricted-syntax': [
        'error',
        { selector: "ThrowStatement > NewExpression[callee.name='Error']", message: 'Throw a typed error (one class per failure a caller can act on).' },
      ],
    },
  },
  {
    files: ['**/*.test.ts', '**/test/**/*.ts', '**/vitest.config.ts'],
    rules: {
      'no-restricted-syntax': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // JavaScript run as it is (the Python script host, the PDF worker, scripts, the binary, benchmarks):
    // the same rules where they need no types; Node's globals
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: { ...globals.node } },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    // benchmarks are scripts: a failure ends the run with its message
    files: ['bench/**'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    // the skill kit, and the skills' test harnesses (exempt from the service boundaries above)
    files: HTTP_SKILL_FILES,
    rules: { 'no-restricted-imports': ['error', { patterns: [PACKAGE_BY_INDEX, NOT_THE_GRPC_KIT] }] },
  },
  {
    // one way to read the code: no file over 500 lines, no function over 80 (blank lines and comments not counted);
    // tests are tables of cases and are left out
    files: ['**/*.ts', '**/*.mjs'],
    ignores: ['**/*.test.ts', '**/test/**'],
    rules: {
      'max-lines': ['error', { max: 500 }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // data tables: every configuration key, every catalog kind, one entry each
    files: ['libs/config/src/config-keys.ts', 'libs/domain/src/catalog.ts'],
    rules: { 'max-lines': 'off' },
  },
  {
    // handler maps (one handler per RPC of a service) and the CLI's command declarations (one entry per command)
    files: ['services/*/src/*.service.ts', 'services/cli/src/commands/*.ts'],
    rules: { 'max-lines-per-function': 'off' },
  },
  ...serviceBoundaries,
);
