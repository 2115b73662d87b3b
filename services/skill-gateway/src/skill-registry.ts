import { AlreadyExistsError, NotFoundError, type Skill, type SkillCapabilityName, SKILL_CAPABILITIES, skillViolations, ValidationError } from '@loom/domain';
import { type Database } from '@loom/postgres';

/** A registered skill with its registry times. */
export interface RegisteredSkill {
  readonly skill: Skill & { readonly capability: SkillCapabilityName };
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

interface Row {
  name: string;
  capability: string;
  url: string;
  pipeline: string | null;
  version: string | null;
  parameters: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'name, capability, url, pipeline, version, parameters, created_at, updated_at';

function fromRow(row: Row): RegisteredSkill {
  const capability = row.capability as SkillCapabilityName;
  const skill: Skill & { capability: SkillCapabilityName } = { name: row.name, url: row.url, capability };
  if (row.pipeline !== null) skill.pipeline = row.pipeline;
  if (row.version !== null) skill.version = row.version;
  if (row.parameters !== null) skill.parameters = row.parameters;
  return { skill, createdAt: row.created_at, updatedAt: row.updated_at };
}

/** Checks a registration: a capability, then the fields by that capability's rules; one ValidationError with every violation. */
export function checkRegistration(skill: Skill | undefined): Skill & { capability: SkillCapabilityName } {
  if (skill === undefined) throw ValidationError.of('skill', 'is required', 'MISSING_FIELD');
  const { capability } = skill;
  if (capability === undefined || !(SKILL_CAPABILITIES as readonly string[]).includes(capability)) {
    throw ValidationError.of('skill.capability', `is required: one of ${SKILL_CAPABILITIES.join(', ')}`, 'MISSING_FIELD');
  }
  const violations = skillViolations(skill, capability, 'skill');
  if (violations.length > 0) throw new ValidationError(violations);
  return { ...skill, capability };
}

/**
 * The skill registry: one row per skill in `public.skill_registration`. Every gateway on the same database sees the
 * same registry; `get` (the call path) reuses what it read for `cacheMs`, so a change made through another gateway
 * shows there within that time, and at once through this one.
 */
export class SkillRegistry {
  private readonly cache = new Map<string, { readonly entry: RegisteredSkill | undefined; readonly until: number }>();

  constructor(
    private readonly db: Database,
    private readonly cacheMs: number,
  ) {}

  /** Registers a checked skill; an existing name is AlreadyExistsError unless `replace`. */
  async register(skill: Skill & { capability: SkillCapabilityName }, replace: boolean): Promise<RegisteredSkill> {
    const values = [
      skill.name,
      skill.capability,
      skill.url,
      emptyToNull(skill.pipeline),
      emptyToNull(skill.version),
      skill.parameters === undefined ? null : JSON.stringify(skill.parameters),
    ];
    const conflict = replace
      ? 'ON CONFLICT (name) DO UPDATE SET capability = EXCLUDED.capability, url = EXCLUDED.url, pipeline = EXCLUDED.pipeline, version = EXCLUDED.version, parameters = EXCLUDED.parameters, updated_at = now()'
      : 'ON CONFLICT (name) DO NOTHING';
    const { rows } = await this.db.query<Row>(
      `INSERT INTO public.skill_registration (name, capability, url, pipeline, version, parameters) VALUES ($1, $2, $3, $4, $5, $6::jsonb) ${conflict} RETURNING ${COLUMNS}`,
      values,
    );
    const [row] = rows;
    if (row === undefined) throw new AlreadyExistsError('skill', skill.name);
    const registered = fromRow(row);
    this.cache.delete(skill.name);
    return registered;
  }

  /** Every registered skill, by name. */
  async list(): Promise<RegisteredSkill[]> {
    const { rows } = await this.db.query<Row>(`SELECT ${COLUMNS} FROM public.skill_registration ORDER BY name`);
    return rows.map(fromRow);
  }

  /** The registered skill of a name; NotFoundError when there is none. */
  async get(name: string): Promise<RegisteredSkill> {
    const now = Date.now();
    const cached = this.cache.get(name);
    let entry = cached !== undefined && cached.until > now ? cached.entry : undefined;
    if (cached === undefined || cached.until <= now) {
      const { rows } = await this.db.query<Row>(`SELECT ${COLUMNS} FROM public.skill_registration WHERE name = $1`, [name]);
      entry = rows[0] === undefined ? undefined : fromRow(rows[0]);
      if (this.cacheMs > 0) this.cache.set(name, { entry, until: now + this.cacheMs });
    }
    if (entry === undefined) throw new NotFoundError('skill', name);
    return entry;
  }

  /** Deletes a registration; NotFoundError when there is none. */
  async delete(name: string): Promise<void> {
    const { rowCount } = await this.db.query('DELETE FROM public.skill_registration WHERE name = $1', [name]);
    this.cache.delete(name);
    if (rowCount === 0) throw new NotFoundError('skill', name);
  }
}

function emptyToNull(value: string | undefined): string | null {
  return value === undefined || value === '' ? null : value;
}
