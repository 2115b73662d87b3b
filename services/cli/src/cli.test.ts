import { describe, expect, it } from 'vitest';
import { type Command } from 'commander';
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

/** Every command path below `command` that has no subcommands: [['workflow', 'push'], ['health'], …]. */
function leafPaths(command: Command, above: readonly string[] = []): string[][] {
  return command.commands.flatMap((sub) => {
    const path = [...above, sub.name()];
    return sub.commands.length === 0 ? [path] : leafPaths(sub, path);
  });
}

/** The long and short flags of some options. */
const flagsOf = (options: readonly { long?: string; short?: string }[]): string[] =>
  options.flatMap((option) => [option.long, option.short].filter((flag): flag is string => flag !== undefined));

describe('options never clash', () => {
  it("no command's option, nor its parents', shares a flag with a global option of the program built for it", async () => {
    const paths = leafPaths(await buildProgram());
    expect(paths.length).toBeGreaterThan(20);
    const clashes: string[] = [];
    for (const path of paths) {
      const program = await buildProgram(path);
      const globals = new Set(flagsOf(program.options));
      let command: Command | undefined = program;
      for (const word of path) {
        command = command?.commands.find((sub) => sub.name() === word);
        for (const flag of flagsOf(command?.options ?? [])) if (globals.has(flag)) clashes.push(`loom ${path.join(' ')} ${flag}`);
      }
    }
    expect(clashes).toEqual([]);
  });

  it('loom skill register … --version v2 hands v2 to the command; loom --version alone is still the version', async () => {
    const argv = ['skill', 'register', '--capability', 'entity-extraction', '--name', 'x', '--url', 'http://127.0.0.1:9/v2/annotate', '--version', 'v2'];
    const program = await buildProgram(argv);
    const register = program.commands.find((command) => command.name() === 'skill')?.commands.find((command) => command.name() === 'register');
    let received: Record<string, unknown> | undefined;
    register?.action((_file: unknown, options: Record<string, unknown>) => void (received = options));
    await program.parseAsync(argv, { from: 'user' });
    expect(received).toMatchObject({ name: 'x', version: 'v2' });
    expect(flagsOf((await buildProgram(['--version'])).options)).toContain('--version');
  });
});
