import { type SkillCapabilityName } from '@loom/domain';
import { type Logger } from '@loom/telemetry';
import { type SkillDefinition } from './skill-definition.js';
import { type SkillSettings } from './skill-settings.js';

/** What a skill module gets to build its service. */
export interface SkillContext {
  readonly settings: SkillSettings;
  readonly logger: Logger;
}

/** A skill service as a unit to deploy: alone through its own main, or with the others in `loom skills serve`. */
export interface SkillModule {
  /** `annotation`, `keywords`, `web-data`, `pdf`. */
  readonly name: string;
  /** Port of its own main (inside its container) when SERVER_PORT is not set. */
  readonly defaultPort: number;
  /** Port on the host, where `loom skills serve` puts it (the port published by the deployment definitions). */
  readonly hostPort: number;
  /** The path a skill registration's URL names (`/v2/annotate`, `/extractKeywords`). */
  readonly registrationPath: string;
  /** The capability it fulfils, as a skill registration names it. */
  readonly capability: SkillCapabilityName;
  create(context: SkillContext): Promise<SkillDefinition>;
}

/** The skill registration of a module served at `baseUrl` (`http://127.0.0.1:8085`), as `loom.skills.register.<name>` takes it. */
export function registrationOf(module: SkillModule, baseUrl: string): Record<string, unknown> {
  const url = `${baseUrl}${module.registrationPath}`;
  if (module.capability !== 'ENTITY_EXTRACTION') return { capability: module.capability, url };
  return { capability: module.capability, url, pipeline: 'default', version: module.registrationPath.startsWith('/v2/') ? 'v2' : '' };
}
