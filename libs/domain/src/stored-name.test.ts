import { describe, expect, it } from 'vitest';
import { ValidationError } from '@loom/foundation';
import { checkWorkflowName, formatStoredName, newStoredName, parseStoredName, resolveStoredName, workflowBaseName } from './stored-name.js';

const UUID = '0f8e7d6c-5b4a-4392-8a1b-2c3d4e5f6a7b';

describe('stored names', () => {
  it('parse and format <workflow_name>_<uuid>, underscores and spaces in the workflow name included', () => {
    expect(parseStoredName(`etl_nightly_${UUID}`)).toEqual({ full: `etl_nightly_${UUID}`, base: 'etl_nightly', uuid: UUID });
    expect(parseStoredName(`My flow_${UUID.toUpperCase()}`)).toMatchObject({ base: 'My flow', uuid: UUID });
    expect(formatStoredName('etl', UUID).full).toBe(`etl_${UUID}`);
    expect(parseStoredName(newStoredName('etl').full)?.base).toBe('etl');
    for (const name of ['etl', `_${UUID}`, `etl_${UUID}x`, `etl-${UUID}`]) expect(parseStoredName(name), name).toBeUndefined();
    expect(workflowBaseName(`etl_nightly_${UUID}`)).toBe('etl_nightly');
    expect(workflowBaseName('etl')).toBe('etl');
  });

  it("resolve a bare name to its own workflow only: 'etl' is not 'etl_nightly_<uuid>'", () => {
    const nightly = `etl_nightly_${UUID}`;
    expect(resolveStoredName('etl', [nightly])).toBeUndefined();
    expect(resolveStoredName('etl_nightly', [nightly])).toBe(nightly);
    expect(resolveStoredName(nightly, [nightly])).toBe(nightly);
    const etl = `etl_${UUID}`;
    expect(resolveStoredName('etl', [nightly, etl])).toBe(etl);
    expect(() => resolveStoredName('etl', [etl, 'etl_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d'], 'workflow_name')).toThrow(ValidationError);
    expect(() => resolveStoredName('etl', [etl, 'etl_1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d'], 'workflow_name')).toThrow(/'etl' names 2 workflows/);
    expect(() => resolveStoredName('', [etl])).toThrow(/is required/);
  });

  it('refuse names that could not be a file of the storage directory', () => {
    expect(checkWorkflowName('etl nightly')).toBe('etl nightly');
    for (const bad of ['', '../x', 'a/b', '.hidden', ' padded', 'nul\u0000'])
      expect(() => checkWorkflowName(bad), JSON.stringify(bad)).toThrow(ValidationError);
  });
});
