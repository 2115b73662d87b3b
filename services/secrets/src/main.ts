#!/usr/bin/env node
// Runs loom.v1.Secrets alone, for split deployments: `node dist/main.js --config loom.yaml --set key=value`.
import { runMain } from '@loom/service-kit';
import { secretsModule } from './index.js';

await runMain([secretsModule], process.argv.slice(2));
