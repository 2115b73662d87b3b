import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import globals from 'globals';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import tseslint from 'typescript-eslint';

const root = dirname(fileURLToPath(import.meta.url));

const PACKAGE_BY_INDEX = { group: ['@loom/*/src/*', '**/libs/*/src/*', '**/services/*/src/*'], message: 'Import a package by its name and its index.' };

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

/** Every workspace package (a folder of libs/, services/ or services/skills/ with a package.json, and deploy/): its folder and name. */
export function workspacePackages() {
  const folders = ['libs', 'services', 'services/skills'].flatMap((parent) =>
    readdirSync(join(root, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && existsSync(join(root, parent, entry.name, 'package.json')))
      .map((entry) => `${parent}/${entry.name}`),
  );
  return [...folders, 'deploy', 'clients'].map((folder) => ({ folder, name: JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8')).name }));
}

/**
 * The floors of the house, the ground first. A package imports packages of lower floors only, never one of its own
 * floor or above (itself by its own name excepted); the services, all on one floor, meet only in a composer (below).
 * docs/architecture.md draws this table; services/cli/test/lint-rules.test.ts holds it, the picture and every
 * package.json to it.
 */
export const FLOORS = [
  { name: 'ground', packages: ['@loom/foundation'] },
  { name: 'leaves', packages: ['@loom/config', '@loom/contracts', '@loom/testing'] },
  { name: 'domain', packages: ['@loom/domain', '@loom/telemetry'] },
  { name: 'adapters', packages: ['@loom/identity', '@loom/messaging', '@loom/nlp', '@loom/postgres'] },
  { name: 'kits', packages: ['@loom/graph', '@loom/nlp-training', '@loom/service-kit', '@loom/skill-service-kit'] },
  {
    name: 'services',
    packages: [
      '@loom/audit',
      '@loom/config-store',
      '@loom/console',
      '@loom/executor',
      '@loom/scheduler',
      '@loom/secrets',
      '@loom/skill-gateway',
      '@loom/skill-annotation',
      '@loom/skill-keywords',
      '@loom/skill-pdf',
      '@loom/skill-web-data',
    ],
  },
  { name: 'binary', packages: ['@loom/cli'] },
  { name: 'deployment', packages: ['@loom/deploy'] },
  { name: 'clients', packages: ['@loom/clients'] },
];

/**
 * A service depends on libraries, never on another service's code (DESIGN.md). Code that composes services on purpose
 * is exempt: the CLI (it runs them all) and each service's declared test helper, test/harness.ts, through which its
 * tests start the services they need.
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
const HTTP_SKILL_PACKAGES = ['@loom/skill-service-kit', '@loom/skill-annotation', '@loom/skill-keywords', '@loom/skill-pdf', '@loom/skill-web-data'];

/** What loads gRPC: grpc-js, http2, the generated contracts, the domain's proto conversion, the gRPC interceptors. */
const LOADS_GRPC = ['@grpc/*', 'http2', 'node:http2', '@loom/contracts', '@loom/contracts/*', '@loom/domain/proto', '@loom/telemetry/grpc'];

/**
 * The packages that load no gRPC, each with its files that may: the ground floor, the domain's main entry (its proto
 * conversion, @loom/domain/proto, and the tests apart), the HTTP skills and their kit.
 */
const GRPC_FREE_EXCEPT = {
  '@loom/foundation': [],
  '@loom/domain': ['libs/domain/src/workflow-proto.ts', 'libs/domain/src/workflow-proto.test.ts', 'libs/domain/test/**'],
  ...Object.fromEntries(HTTP_SKILL_PACKAGES.map((name) => [name, []])),
};

/**
 * The one no-restricted-imports of a package's files: by its index, never the gRPC kit from an HTTP skill, no gRPC
 * where none loads, no other service outside a composer, nothing of its own floor or above. A specifier is reported
 * once, by one group.
 */
function importRule({ name }, { composer, grpcFree }) {
  const floor = FLOORS.findIndex((candidate) => candidate.packages.includes(name));
  const services = FLOORS.find((candidate) => candidate.name === 'services').packages;
  const groups = [
    ...(HTTP_SKILL_PACKAGES.includes(name) ? [NOT_THE_GRPC_KIT] : []),
    ...(grpcFree
      ? [{ group: LOADS_GRPC, message: `${name} loads no gRPC: not grpc-js, http2, the contracts, @loom/domain/proto or @loom/telemetry/grpc.` }]
      : []),
    ...(services.includes(name) && !composer
      ? [
          {
            group: services.filter((other) => other !== name).flatMap((other) => [other, `${other}/*`]),
            message: `${name} is a service: it may not import another service's code. Call it over gRPC, or compose services in test/harness.ts.`,
          },
        ]
      : []),
    ...(floor === -1
      ? []
      : [
          {
            group: FLOORS.slice(floor)
              .flatMap((above) => above.packages)
              .filter((other) => other !== name && !(services.includes(name) && services.includes(other)))
              .flatMap((other) => [other, `${other}/*`]),
            message: `${name} stands on floor ${floor} (${FLOORS[floor].name}): it imports packages of lower floors only (docs/architecture.md).`,
          },
        ]),
  ];
  // a specifier is matched by one group only: a group's entry already named by an earlier group is left out, and so is
  // a subpath (`@loom/domain/proto`) of a package another group refuses whole (its name alone matches its subpaths too)
  const wholePackages = new Set(groups.flatMap(({ group }) => group).filter((entry) => /^@loom\/[\w-]+$/.test(entry)));
  const named = new Set();
  const patterns = groups
    .map(({ group, message }) => ({
      group: group.filter((entry) => {
        const owner = entry.split('/').slice(0, 2).join('/');
        if (named.has(entry) || (entry !== owner && !entry.endsWith('/*') && wholePackages.has(owner))) return false;
        named.add(entry);
        return true;
      }),
      message,
    }))
    .filter(({ group }) => group.length > 0);
  return { 'no-restricted-imports': ['error', { paths: [FOUNDATION_THROUGH_THE_KIT], patterns: [PACKAGE_BY_INDEX, ...patterns] }] };
}

/**
 * The import rule of each package, in the blocks that give each file its variant: all its files, then those that load
 * no gRPC, its composers, and its composers that load no gRPC (a later block overrides an earlier one).
 */
const packageBoundaries = workspacePackages().flatMap((pkg) => {
  const files = [`${pkg.folder}/**/*.ts`, `${pkg.folder}/**/*.mjs`, `${pkg.folder}/**/*.js`];
  const composerFiles = files.flatMap((file) => COMPOSERS.map((composer) => [file, composer]));
  const grpcExceptions = GRPC_FREE_EXCEPT[pkg.name]; // undefined where the whole package may load gRPC
  return [
    { files, rules: importRule(pkg, { composer: false, grpcFree: false }) },
    ...(grpcExceptions ? [{ files, ignores: grpcExceptions, rules: importRule(pkg, { composer: false, grpcFree: true }) }] : []),
    { files: composerFiles, rules: importRule(pkg, { composer: true, grpcFree: false }) },
    ...(grpcExceptions ? [{ files: composerFiles, ignores: grpcExceptions, rules: importRule(pkg, { composer: true, grpcFree: true }) }] : []),
  ];
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
  // a workspace package is ours, though it lies outside the importing package: no-cycle follows it, and with
  // ignoreExternal skips the rest, which cannot close a cycle of ours (following node_modules too, no-cycle alone took
  // 33 s of the executor's lint; so the lint takes 26.5 s, against 20.6 s with nothing resolved)
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
      // typescript-eslint guesses a "single run" from CI=true and then takes twice the time with the project service
      // (the whole repository's lint: 127 s with CI=true against 68 s without, on 2 cores): no guessing
      parserOptions: { projectService: true, disallowAutomaticSingleRunInference: true },
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
  ...packageBoundaries,
);
