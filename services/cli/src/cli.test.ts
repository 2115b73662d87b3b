import { describe, expect, it } from 'vitest';
import { buildProgram, commandGroups, groupsFor } from './cli.js';

const names = (argv?: readonly string[]) => buildProgram(argv).then((program) => program.commands.map((command) => command.name()));

describe('lazy command groups', () => {
  it('each group registers exactly the top-level commands it names, so every command is reachable by its word', async () => {
    const all = await names();
    expect(all).toEqual(commandGroups.flatMap((group) => group.names));
    for (const group of commandGroups) expect(await names([group.names[0] as string])).toEqual(group.names);
  });

  it("loads only the command's group, skipping global options and their values", () => {
    expect(groupsFor(['--address', 'graph', 'workflow', 'list']).map((group) => group.names)).toEqual([['workflow', 'schedule', 'component', 'message']]);
    expect(groupsFor(['--output=json', '--token', 't', 'health']).map((group) => group.names)).toEqual([['health']]);
  });

  it('loads nothing for --version, and everything for help or an unknown word (for suggestions)', () => {
    expect(groupsFor(['--version'])).toEqual([]);
    expect(groupsFor(['-V'])).toEqual([]);
    expect(groupsFor(['--help'])).toEqual(commandGroups);
    expect(groupsFor([])).toEqual(commandGroups);
    expect(groupsFor(['wrkflow', 'list'])).toEqual(commandGroups);
  });
});
