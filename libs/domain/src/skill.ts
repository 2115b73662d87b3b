// The rules of a skill's configuration fields (the specification's "Skill registration"), per
// capability. The skill gateway applies them to registrations, the config store to the `skill`
// of a workflow's components; both report each broken rule with the JSON path of its field.
import { appendJsonPath, type FieldViolation } from '@loom/foundation';
import { type Skill, type SkillCapabilityName } from './workflow.js';

/** A skill name: letters, digits, spaces and `_ . -`, starting with a letter or digit, at most 128 characters. */
export const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,127}$/;

/** The keyword extraction parameters the specification names, spelled as it spells them (`allowedDepencies` too). */
export const KEYWORD_EXTRACTION_PARAMETERS = Object.freeze([
  'annotatedText',
  'motherNode',
  'iterations',
  'damp',
  'threshold',
  'stopwords',
  'removeStopwords',
  'respectDirections',
  'respectSentences',
  'useDependencies',
  'dependenciesGraph',
  'topXTags',
  'keywordLabel',
  'cleanKeywords',
  'admittedPOSs',
  'forbiddenPOSs',
  'forbiddenNEs',
  'allowedDepencies',
] as const);

/** Which annotation endpoint an entity extraction skill calls: `/annotate` (standard) or `/v2/annotate`. */
export type AnnotationEndpoint = 'standard' | 'v2';

/** Reason codes of skill violations. */
export type SkillViolationReason = 'MISSING_FIELD' | 'INVALID_VALUE' | 'UNKNOWN_PARAMETER' | 'NOT_APPLICABLE';

const ANNOTATE_PATH = /\/annotate$/;
const V2_ANNOTATE_PATH = /\/v2\/annotate$/;
const KEYWORDS_PATH = /\/extractKeywords(\/|$)/;

/** The endpoint an entity extraction skill's URL names (undefined when it names neither). */
export function annotationEndpoint(url: string): AnnotationEndpoint | undefined {
  const path = pathOf(url);
  if (path === undefined) return undefined;
  if (V2_ANNOTATE_PATH.test(path)) return 'v2';
  if (ANNOTATE_PATH.test(path)) return 'standard';
  return undefined;
}

/** What skillViolations checks. */
export interface SkillCheckOptions {
  /** A skill given by name only (its url empty) is allowed: it is resolved from the registry at start. */
  readonly allowNameOnly?: boolean;
}

/**
 * Checks a skill's fields against the rules of a capability; answers one violation per broken rule, each naming
 * `<path>.<field>`. The rules:
 * - every capability: `name` (SKILL_NAME) and `url` (absolute http or https, no user or password in it);
 * - entity extraction: the url path ends in `/annotate` or `/v2/annotate`; `pipeline` is required (`default` selects
 *   the default pipeline); `version` is blank for `/annotate` and `v2` for `/v2/annotate`; no `parameters`;
 * - keyword extraction: the url path has `/extractKeywords`; `parameters` only among KEYWORD_EXTRACTION_PARAMETERS;
 *   no `pipeline` or `version`;
 * - web data extraction and PDF parsing: `name` and `url` only.
 * A `capability` written in the skill must be the one checked against.
 */
export function skillViolations(skill: Skill, capability: SkillCapabilityName, path: string, options: SkillCheckOptions = {}): FieldViolation[] {
  const violations: FieldViolation[] = [];
  const field = (name: string): string => appendJsonPath(path, name);
  const report = (name: string, description: string, reason: SkillViolationReason, fullPath = field(name)): void => {
    violations.push({ field: fullPath, description, reason });
  };

  if (isBlank(skill.name)) report('name', 'is required', 'MISSING_FIELD');
  else if (!SKILL_NAME.test(skill.name))
    report('name', 'must start with a letter or digit and hold only letters, digits, spaces and _ . - (at most 128)', 'INVALID_VALUE');
  if (skill.capability !== undefined && skill.capability !== capability)
    report('capability', `must be ${capability} here, not ${skill.capability}`, 'INVALID_VALUE');

  const nameOnly = isBlank(skill.url) && !isBlank(skill.name) && options.allowNameOnly === true;
  if (nameOnly) return violations;
  if (isBlank(skill.url)) {
    report('url', 'is required', 'MISSING_FIELD');
    return violations;
  }
  const url = parseHttpUrl(skill.url);
  if (url === undefined) {
    report('url', 'must be an absolute http or https URL', 'INVALID_VALUE');
    return violations;
  }
  if (url.username !== '' || url.password !== '')
    report('url', 'must not carry a user or password (skills are called without credentials in the URL)', 'INVALID_VALUE');

  const has = (value: unknown): boolean => value !== undefined && value !== null && value !== '';
  const hasParameters = skill.parameters !== undefined && Object.keys(skill.parameters).length > 0;
  switch (capability) {
    case 'ENTITY_EXTRACTION': {
      const endpoint = annotationEndpoint(skill.url);
      if (endpoint === undefined) report('url', 'must end in /annotate (standard output) or /v2/annotate (multi-token entities not merged)', 'INVALID_VALUE');
      if (isBlank(skill.pipeline)) report('pipeline', "is required: the NLP pipeline's name, or 'default' for the default pipeline", 'MISSING_FIELD');
      const version = skill.version ?? '';
      if (version !== '' && version !== 'v2') report('version', "must be blank (for /annotate) or 'v2' (for /v2/annotate)", 'INVALID_VALUE');
      else if (endpoint === 'v2' && version !== 'v2') report('version', "must be 'v2': the url ends in /v2/annotate", 'INVALID_VALUE');
      else if (endpoint === 'standard' && version === 'v2') report('version', 'must be blank: the url ends in /annotate, not /v2/annotate', 'INVALID_VALUE');
      if (hasParameters) report('parameters', 'is not a field of an entity extraction skill', 'NOT_APPLICABLE');
      break;
    }
    case 'KEYWORD_EXTRACTION': {
      if (!KEYWORDS_PATH.test(url.pathname)) report('url', 'must include /extractKeywords', 'INVALID_VALUE');
      for (const name of Object.keys(skill.parameters ?? {})) {
        if (!(KEYWORD_EXTRACTION_PARAMETERS as readonly string[]).includes(name)) {
          report(
            name,
            `is not a keyword extraction parameter (one of ${KEYWORD_EXTRACTION_PARAMETERS.join(', ')})`,
            'UNKNOWN_PARAMETER',
            appendJsonPath(field('parameters'), name),
          );
        }
      }
      if (has(skill.pipeline)) report('pipeline', 'is a field of entity extraction skills only', 'NOT_APPLICABLE');
      if (has(skill.version)) report('version', 'is a field of entity extraction skills only', 'NOT_APPLICABLE');
      break;
    }
    case 'WEB_DATA_EXTRACTION':
    case 'PDF_PARSING': {
      if (has(skill.pipeline)) report('pipeline', 'is a field of entity extraction skills only', 'NOT_APPLICABLE');
      if (has(skill.version)) report('version', 'is a field of entity extraction skills only', 'NOT_APPLICABLE');
      if (hasParameters) report('parameters', 'is a field of keyword extraction skills only', 'NOT_APPLICABLE');
      break;
    }
  }
  return violations;
}

function isBlank(value: string | undefined): boolean {
  return value === undefined || value.trim() === '';
}

function parseHttpUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined; // not a URL at all: the caller reports it
  }
}

function pathOf(text: string): string | undefined {
  return parseHttpUrl(text)?.pathname;
}
