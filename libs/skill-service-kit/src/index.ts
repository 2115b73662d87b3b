export { AddressPolicy, AddressRefusedError } from './address-policy.js';
export {
  InvalidRequestError,
  NotFoundError,
  PayloadTooLargeError,
  ServiceBusyError,
  SkillError,
  type SkillErrorBody,
  SkillSettingsError,
  UnprocessableError,
  UnsupportedMediaTypeError,
} from './errors.js';
export { type FetchedDocument, type FetchLimits, safeFetch, type SafeFetchOptions } from './safe-fetch.js';
export { type JsonSchema, JsonText, type SkillDefinition, type SkillRequest, type SkillRoute } from './skill-definition.js';
export { registrationOf, type SkillContext, type SkillModule } from './skill-module.js';
export { type SkillLimits, SkillServer, type SkillServerOptions, type SkillServerState, startSkillServer } from './skill-server.js';
export { DEFAULT_SKILL_SETTINGS, SKILL_SETTING_VARIABLES, type SkillSettings, skillSettingsFromEnv } from './skill-settings.js';
export { type RunningSkills, runSkillMain, runSkills, type RunSkillsOptions, serveSkills, type ServeSkillsOptions } from './serve-skills.js';
export { validationField } from './validation-field.js';
