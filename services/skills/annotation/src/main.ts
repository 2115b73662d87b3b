#!/usr/bin/env node
// The entity extraction skill in its own process (port 8085): SERVER_PORT, SKILL_DATA_DIRECTORY (/data in its container) and the SKILL_* variables set it.
import { runSkillMain } from '@loom/skill-service-kit';
import { annotationSkill } from './index.js';

await runSkillMain(annotationSkill);
