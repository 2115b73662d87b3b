#!/usr/bin/env node
// The PDF parsing skill in its own process (port 8089): SERVER_PORT and the SKILL_* variables set it.
import { runSkillMain } from '@loom/skill-service-kit';
import { pdfSkill } from './index.js';

await runSkillMain(pdfSkill);
