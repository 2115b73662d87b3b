import { describe, expect, it } from 'vitest';
import { appendJsonPath, formatJsonPath } from './json-path.js';

describe('formatJsonPath', () => {
  it('joins keys with dots and indexes with brackets', () => {
    expect(formatJsonPath(['components', 2, 'options', 0, 'value'])).toBe('components[2].options[0].value');
  });

  it('is empty for the root', () => {
    expect(formatJsonPath([])).toBe('');
  });

  it('quotes keys that are not identifiers', () => {
    expect(formatJsonPath(['resources', 0, 'parameters', 'read-only'])).toBe('resources[0].parameters["read-only"]');
    expect(appendJsonPath('', 'my key')).toBe('["my key"]');
  });
});
