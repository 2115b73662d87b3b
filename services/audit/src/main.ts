#!/usr/bin/env node
// Runs loom.v1.Audit alone, for split deployments: `node dist/main.js --config loom.yaml --set key=value`.
import { runMain } from '@loom/service-kit';
import { auditModule } from './index.js';

await runMain([auditModule], process.argv.slice(2));
