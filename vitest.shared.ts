import { defineConfig, type UserConfig } from 'vitest/config';

const sourceConditions = ['@loom/source', 'node', 'import', 'default'];

/** Vitest config shared by every package: workspace packages resolve to their TypeScript sources. */
export function defineLoomTestConfig(overrides: UserConfig['test'] = {}): UserConfig {
  return defineConfig({
    resolve: { conditions: sourceConditions },
    ssr: { resolve: { conditions: sourceConditions, externalConditions: ['@loom/source'] } },
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      environment: 'node',
      pool: 'forks',
      testTimeout: 30_000,
      hookTimeout: 30_000,
      ...overrides,
    },
  });
}
