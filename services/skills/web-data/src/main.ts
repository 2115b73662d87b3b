#!/usr/bin/env node
// The web data extraction skill in its own process (container port 8000, published as 8087): SERVER_PORT and the SKILL_* variables set it.
import { runSkillMain } from '@loom/skill-service-kit';
import { webDataSkill } from './index.js';

await runSkillMain(webDataSkill);
