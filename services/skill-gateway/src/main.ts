#!/usr/bin/env node
// Runs loom.v1.SkillGateway alone, for split deployments: `node dist/main.js --config loom.yaml --set key=value`.
import { runMain } from '@loom/service-kit';
import { skillGatewayModule } from './index.js';

await runMain([skillGatewayModule], process.argv.slice(2));
