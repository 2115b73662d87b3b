#!/usr/bin/env node
// Runs loom.v1.WorkflowStore alone, for split deployments: `node dist/main.js --config loom.yaml --set key=value`.
import { runMain } from '@loom/service-kit';
import { configStoreModule } from './index.js';

await runMain([configStoreModule], process.argv.slice(2));
