import { defineConfig, type UserConfig } from 'vitest/config';

const sourceConditions = ['@loom/source', 'node', 'import', 'default'];
// Vitest starts its workers with `--conditions <each ssr.resolve.conditions>`. With `import` among them, Node's own
// require() inside pg (CommonJS) resolves pg-pool to its ESM build and `class extends Pool` fails. Vite adds
// import/require per import by itself, so leaving them out of the SSR list changes nothing for our sources.
const ssrConditions = ['@loom/source', 'node', 'default'];

/** Vitest config shared by every package: workspace packages resolve to their TypeScript sources. */
export function defineLoomTestConfig(overrides: UserConfig['test'] = {}): UserConfig {
  return defineConfig({
    resolve: { conditions: sourceConditions },
    ssr: { resolve: { conditions: ssrConditions, externalConditions: ['@loom/source'] } },
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      environment: 'node',
      pool: 'forks',
      testTimeout: 30_000,
      // hooks start embedded databases (PGlite, PGlite with AGE): seconds alone, over 30 s on a machine shared by many builds
      hookTimeout: 120_000,
      ...overrides,
    },
  });
}
