#!/usr/bin/env node
// Runs loom.v1.Executor alone, for split deployments: `node dist/main.js --config loom.yaml --set key=value`.
import { runMain } from '@loom/service-kit';
import { executorModule } from './index.js';

await runMain([executorModule], process.argv.slice(2));
