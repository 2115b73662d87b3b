#!/usr/bin/env node
// Runs loom.v1.Scheduler alone, for split deployments: `node dist/main.js --config loom.yaml --set key=value`.
import { runMain } from '@loom/service-kit';
import { schedulerModule } from './index.js';

await runMain([schedulerModule], process.argv.slice(2));
