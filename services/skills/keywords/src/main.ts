#!/usr/bin/env node
// The keyword extraction skill in its own process (port 8086): SERVER_PORT and the SKILL_* variables set it.
import { runSkillMain } from '@loom/skill-service-kit';
import { keywordsSkill } from './index.js';

await runSkillMain(keywordsSkill);
