import { type Command } from 'commander';
import {
  registrationOf,
  type RunningSkills,
  runSkills,
  type RunSkillsOptions,
  serveSkills,
  type ServeSkillsOptions,
  type SkillModule,
  type SkillSettings,
  SkillSettingsError,
  skillSettingsFromEnv,
} from '@loom/skill-service-kit';
import { annotationSkill } from '@loom/skill-annotation';
import { keywordsSkill } from '@loom/skill-keywords';
import { pdfSkill } from '@loom/skill-pdf';
import { webDataSkill } from '@loom/skill-web-data';
import { cliIo } from '../cli-io.js';
import { UsageError } from '../usage-error.js';

/** loom's own skill services, by name, in start order. */
export const skillModules: readonly SkillModule[] = [annotationSkill, keywordsSkill, webDataSkill, pdfSkill];

/** The modules named in `--only a,b`; every skill when absent. */
export function selectSkills(list: string | undefined): SkillModule[] {
  if (list === undefined || list.trim() === '' || list.trim() === 'all') return [...skillModules];
  const names = list
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const known = skillModules.map((module) => module.name);
  const unknown = names.filter((name) => !known.includes(name));
  if (unknown.length > 0) throw new UsageError(`--only: unknown skill ${unknown.map((name) => `'${name}'`).join(', ')}; choose from ${known.join(', ')}`);
  return skillModules.filter((module) => names.includes(module.name));
}

/** `--port web-data=9000` (repeatable) → skill name to port. */
export function parsePorts(entries: readonly string[]): Map<string, number> {
  const ports = new Map<string, number>();
  const known = skillModules.map((module) => module.name);
  for (const entry of entries) {
    const [name = '', text = ''] = entry.split('=');
    const port = Number(text);
    if (!known.includes(name)) throw new UsageError(`--port ${entry}: unknown skill '${name}'; choose from ${known.join(', ')}`);
    if (!/^\d+$/.test(text) || port > 65535) throw new UsageError(`--port ${entry}: expected <skill>=<port from 0 to 65535>`);
    ports.set(name, port);
  }
  return ports;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `loom skills serve`: loom's skill services in this process, each on its own port. */
export function addSkillsCommands(program: Command): void {
  const skills = program.command('skills').description("loom's own skill microservices (annotation, keywords, web data, PDF)");
  skills
    .command('serve')
    .description('run the skill services in this process until SIGTERM or SIGINT (settings: SERVER_HOST and the SKILL_* variables)')
    .option('--only <list>', `comma-separated skills to run: ${skillModules.map((module) => module.name).join(',')}`)
    .option(
      '--port <skill=port>',
      'port of one skill (repeatable; 0 picks a free one); default SERVER_PORT for a skill alone, else the published ports 8085, 8086, 8087, 8089',
      collect,
      [],
    )
    .action(async (options: { only?: string; port: string[] }) => {
      const modules = selectSkills(options.only);
      const ports = parsePorts(options.port);
      // a skill alone (`--only annotation`, as in its container) listens on SERVER_PORT when set
      await serveSkillModules(modules, {
        env: cliIo().env,
        portOf: (module) => ports.get(module.name),
        portSettingOf: (module) => (modules.length === 1 && !ports.has(module.name) ? 'SERVER_PORT' : `--port ${module.name}`),
      });
    });
}

/** A bad SKILL_* setting as the usage error it is on loom's command line; any other error as it is. */
function asUsageError(error: unknown): unknown {
  return error instanceof SkillSettingsError ? new UsageError(`invalid setting ${error.message}`) : error;
}

/** Runs skill modules until SIGTERM or SIGINT; a bad SKILL_* setting is a usage error. */
export async function serveSkillModules(modules: readonly SkillModule[], options: RunSkillsOptions): Promise<void> {
  try {
    await runSkills(modules, options);
  } catch (error) {
    throw asUsageError(error);
  }
}

/** Starts skill modules and resolves once each listens (they run until stopped); a bad SKILL_* setting is a usage error. */
export async function startSkillModules(modules: readonly SkillModule[], options: ServeSkillsOptions): Promise<RunningSkills> {
  try {
    return await serveSkills(modules, options);
  } catch (error) {
    throw asUsageError(error);
  }
}

/** Settings of skills run beside `loom serve`: the environment's, with skill data in `<loom.data.directory>/skills`. */
export function besideLoomSettings(skillsDirectory: string, env: NodeJS.ProcessEnv): SkillSettings {
  try {
    return { ...skillSettingsFromEnv(env), dataDirectory: skillsDirectory };
  } catch (error) {
    throw asUsageError(error);
  }
}

/**
 * `--set loom.skills.register.<name>=…` for each skill running beside loom, at the port it
 * listens on, so that loom's skill gateway registers it at start; a name the configuration
 * registers already is left to the configuration.
 */
export function skillRegistrationOverrides(
  modules: readonly SkillModule[],
  running: RunningSkills,
  host: string,
  configured: (name: string) => boolean,
): string[] {
  const reachableHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return modules
    .filter((module) => !configured(module.name))
    .map((module) => {
      const port = running.servers.get(module.name)?.port ?? module.hostPort;
      return `loom.skills.register.${module.name}=${JSON.stringify(registrationOf(module, `http://${reachableHost.includes(':') ? `[${reachableHost}]` : reachableHost}:${port}`))}`;
    });
}
