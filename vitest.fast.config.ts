// `npm run test:fast`: the developer's inner loop. Every package's unit tests (`src/**/*.test.ts`, beside the code) in
// one vitest run, each package with its own config (vitest.shared.ts): no lint, typecheck or build first, and no
// server from outside (PostgreSQL, NATS, Neo4j, helm); the integration tests in each package's `test/` stay in `npm test`.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: ['libs/*/vitest.config.ts', 'services/*/vitest.config.ts', 'services/skills/*/vitest.config.ts'],
    // a run of several projects takes the fork options from here, not from the projects' own configs: the executor's
    // (isolated-vm asks for --no-node-snapshot on Node 20; the back-pressure test measures retained memory with gc)
    poolOptions: { forks: { execArgv: ['--no-node-snapshot', '--expose-gc'] } },
  },
});
