import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { SkillSettingsError } from './errors.js';
import { skillSettingsFromEnv } from './skill-settings.js';

describe('skillSettingsFromEnv', () => {
  it('sizes the worker threads to the cores by default, and to SKILL_WORKERS when set', () => {
    expect(skillSettingsFromEnv({}).workers).toBe(availableParallelism());
    expect(skillSettingsFromEnv({ SKILL_WORKERS: '3' }).workers).toBe(3);
  });

  it('refuses a worker count that is not a positive integer, naming the variable', () => {
    for (const value of ['0', 'lots', '1.5']) {
      expect(() => skillSettingsFromEnv({ SKILL_WORKERS: value })).toThrow(SkillSettingsError);
      expect(() => skillSettingsFromEnv({ SKILL_WORKERS: value })).toThrow(/^SKILL_WORKERS: /);
    }
  });
});
