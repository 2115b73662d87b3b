import { setMaxListeners } from 'node:events';
import { status } from '@grpc/grpc-js';
import { CircuitState, type Failure, type SkillResult, SkillGatewayService } from '@loom/contracts';
import { type Skill as SkillMessage } from '@loom/contracts';
import { LoomError, NotFoundError, type Skill, skillViolations, UnavailableError, ValidationError } from '@loom/domain';
import { workflowFromProto, workflowToProto } from '@loom/domain/proto';
import { ConfigError, type LoomConfig } from '@loom/config';
import { attemptSignal } from '@loom/foundation';
import { type AsyncImplementation, type ServiceContext, type ServiceInstance, type ServiceModule } from '@loom/service-kit';
import { type Logger } from '@loom/telemetry';
import fetch from 'node-fetch';
import { type CircuitStateName } from './circuit-breaker.js';
import { callPolicyOf, healthProbeUrls, type SkillCallResult, SkillCaller } from './skill-caller.js';
import { checkRegistration, type RegisteredSkill, SkillRegistry } from './skill-registry.js';
import { openSkillStorage } from './storage.js';

/** Most requests one InvokeSkillBatch may carry. */
export const MAX_BATCH_REQUESTS = 4096;

const CIRCUIT_STATES: Record<CircuitStateName, CircuitState> = {
  CLOSED: CircuitState.CIRCUIT_STATE_CLOSED,
  OPEN: CircuitState.CIRCUIT_STATE_OPEN,
  HALF_OPEN: CircuitState.CIRCUIT_STATE_HALF_OPEN,
};

const PROBE_TIMEOUT_MS = 5000;

/** What the skill gateway RPCs work with. */
export interface SkillGatewayDependencies {
  readonly registry: SkillRegistry;
  readonly caller: SkillCaller;
  readonly logger: Logger;
}

/** A skill's answer parsed as JSON; a skill that answers OK with something else is a failure of the skill. */
function parseAnswer(skill: Skill, result: SkillCallResult): unknown {
  const text = Buffer.from(result.body.buffer, result.body.byteOffset, result.body.byteLength).toString('utf8');
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UnavailableError(`skill '${skill.name}' answered HTTP ${result.httpStatus} with a body that is not JSON`);
  }
}

/** A skill refused a request (a 4xx other than 429): INVALID_ARGUMENT with the skill's message. */
export class SkillRefusedError extends LoomError {
  readonly kind = 'invalid-argument';
}

/** A skill did not answer within its time-out, retries included: DEADLINE_EXCEEDED, retryable (a later call may be answered in time). */
export class SkillTimeoutError extends LoomError {
  readonly kind = 'deadline-exceeded';

  constructor(message: string) {
    super(message, { retryable: true });
  }
}

/** The error a failed call is to the caller (a skill's 4xx is INVALID_ARGUMENT with its message); undefined on OK. */
function errorOf(result: SkillCallResult): LoomError | undefined {
  switch (result.code) {
    case status.OK:
      return undefined;
    case status.INVALID_ARGUMENT:
      return new SkillRefusedError(result.message);
    case status.DEADLINE_EXCEEDED:
      return new SkillTimeoutError(result.message);
    default:
      // unavailable, an open circuit, or a call the caller cancelled (it no longer waits for the answer)
      return new UnavailableError(result.message);
  }
}

/** Throws the error of a failed call. */
function throwIfFailed(result: SkillCallResult): void {
  const error = errorOf(result);
  if (error !== undefined) throw error;
}

/** A failed call as loom.v1.Failure: its error's kind and retryable flag, its message, and what the last attempt got. */
function failureOf(result: SkillCallResult, error: LoomError): Failure {
  return { kind: error.kind, retryable: error.retryable, message: result.message, cause: result.cause };
}

/** The loom.v1.SkillGateway handlers. */
export function skillGatewayImplementation(deps: SkillGatewayDependencies): AsyncImplementation<typeof SkillGatewayService> {
  const { registry, caller, logger } = deps;
  const registered = async (name: string, field: string): Promise<RegisteredSkill> => {
    if (name === '') throw ValidationError.of(field, 'is required', 'MISSING_FIELD');
    return registry.get(name);
  };
  return {
    async registerSkill(request) {
      const skill = checkRegistration(request.skill === undefined ? undefined : skillOf(request.skill));
      const entry = await registry.register(skill, request.replace);
      logger.info({ skill: skill.name, capability: skill.capability, replace: request.replace }, 'skill registered');
      return { skill: skillToProto(entry.skill) };
    },

    async listSkills() {
      const entries = await registry.list();
      return {
        skills: entries.map((entry) => skillToProto(entry.skill)),
        registrations: entries.map((entry) => ({ name: entry.skill.name, createdAt: entry.createdAt, updatedAt: entry.updatedAt })),
      };
    },

    async deleteSkill(request) {
      if (request.name === '') throw ValidationError.of('name', 'is required', 'MISSING_FIELD');
      await registry.delete(request.name);
      logger.info({ skill: request.name }, 'skill deleted');
      return {};
    },

    async invokeSkill(request, context) {
      const { skill } = await registered(request.skillName, 'skill_name');
      const result = await caller.call(skill, { body: Buffer.from(JSON.stringify(request.input ?? {})) }, context.signal);
      throwIfFailed(result);
      const answer = parseAnswer(skill, result);
      const isObject = typeof answer === 'object' && answer !== null && !Array.isArray(answer);
      return { ...(isObject ? { output: answer } : {}), answer };
    },

    async invokeSkillBatch(request, context) {
      if (request.requests.length > MAX_BATCH_REQUESTS) throw ValidationError.of('requests', `must hold at most ${MAX_BATCH_REQUESTS} requests`, 'TOO_LONG');
      const skill = await batchSkill(request.skillName, request.skill, registry);
      // every request of the batch listens for the call's cancellation (a few listeners each, while it waits for the
      // cap, sleeps between attempts and fetches): that many listeners on one signal is by design, not a leak
      setMaxListeners(4 * request.requests.length + 16, context.signal);
      const results = await Promise.all(
        request.requests.map(async (call): Promise<SkillResult> => {
          const result = await caller.call(
            skill,
            { body: call.body, contentType: call.contentType, traceHeaders: call.traceHeaders, path: call.path },
            context.signal,
          );
          const error = errorOf(result);
          return {
            code: result.code,
            message: result.message,
            body: Buffer.from(result.body.buffer, result.body.byteOffset, result.body.byteLength),
            contentType: result.contentType,
            httpStatus: result.httpStatus,
            attempts: result.attempts,
            ...(error === undefined ? {} : { failure: failureOf(result, error) }),
          };
        }),
      );
      return { results };
    },

    async createPipeline(request, context) {
      const { skill } = await registered(request.skillName, 'skill_name');
      if (skill.capability !== 'ENTITY_EXTRACTION') {
        throw ValidationError.of(
          'skill_name',
          `names a ${skill.capability} skill: pipelines are created on entity extraction skills`,
          'WRONG_SKILL_CAPABILITY',
        );
      }
      const pipeline = request.pipeline;
      if (pipeline === undefined) throw ValidationError.of('pipeline', 'is required', 'MISSING_FIELD');
      if (pipeline.name.trim() === '') throw ValidationError.of('pipeline.name', 'is required', 'MISSING_FIELD');
      // fields the caller left empty (proto3 has no absent string or list) are left out, so the skill applies its defaults
      const body = {
        name: pipeline.name,
        ...(pipeline.language === '' ? {} : { language: pipeline.language }),
        ...(pipeline.textProcessor === '' ? {} : { textProcessor: pipeline.textProcessor }),
        ...(pipeline.annotators.length === 0 ? {} : { annotators: pipeline.annotators }),
        nerRegexFiles: pipeline.nerRegexFiles,
      };
      const result = await caller.call(skill, { body: Buffer.from(JSON.stringify(body)), path: '/pipeline/new' }, context.signal);
      throwIfFailed(result);
      const answer = parseAnswer(skill, result);
      logger.info({ skill: skill.name, pipeline: pipeline.name }, 'pipeline created');
      return { response: typeof answer === 'object' && answer !== null && !Array.isArray(answer) ? answer : { answer } };
    },

    async checkSkill(request, context) {
      const { skill } = await registered(request.name, 'name');
      const described = caller.describe(skill);
      const base = { circuitState: CIRCUIT_STATES[described.circuit], inFlight: described.inFlight, maxConcurrency: described.maxConcurrency };
      return { ...(await probeHealth(skill.url, context.signal)), ...base };
    },
  };
}

/** What a skill's health probe found: where it asked (healthProbeUrls, until one answers other than 404) and the answer. */
async function probeHealth(url: string, signal: AbortSignal): Promise<{ reachable: boolean; latencyMs: number; httpStatus: number; detail: string }> {
  const started = performance.now();
  const probes = healthProbeUrls(url);
  for (let index = 0; ; index += 1) {
    const probe = probes[index] as URL;
    // its timer cleared once the probe is answered, not left pending for the time-out's length
    const attempt = attemptSignal(signal, PROBE_TIMEOUT_MS);
    try {
      const response = await fetch(probe.toString(), { method: 'GET', signal: attempt.signal });
      await response.arrayBuffer();
      // not found here: the skill may publish its health at a shorter path
      if (response.status === 404 && index + 1 < probes.length) continue;
      const latencyMs = Math.round(performance.now() - started);
      const tried = probes.slice(0, index + 1).map((each) => each.pathname);
      const detail = response.ok
        ? `GET ${probe.pathname} answered ${response.status}`
        : `GET ${tried.join(', ')} answered ${response.status}: the skill answers, but has no health endpoint there or is unwell`;
      return { reachable: true, latencyMs, httpStatus: response.status, detail };
    } catch (error) {
      const reason =
        error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : error instanceof Error ? error.name : 'unknown error';
      return { reachable: false, latencyMs: Math.round(performance.now() - started), httpStatus: 0, detail: `GET ${probe.pathname} failed: ${reason}` };
    } finally {
      attempt.release();
    }
  }
}

/** The skill of a batch: given in full (a workflow file's skill, checked by its capability's rules), or registered by name. */
async function batchSkill(name: string, given: SkillMessage | undefined, registry: SkillRegistry): Promise<Skill> {
  if (given !== undefined && given.url !== '') {
    const skill = skillOf(given);
    if (skill.capability === undefined) throw ValidationError.of('skill.capability', 'is required for a skill given in full', 'MISSING_FIELD');
    const violations = skillViolations(skill, skill.capability, 'skill');
    if (violations.length > 0) throw new ValidationError(violations);
    return skill;
  }
  const byName = name !== '' ? name : (given?.name ?? '');
  if (byName === '') throw ValidationError.of('skill_name', 'is required (or a skill with its url)', 'MISSING_FIELD');
  try {
    return (await registry.get(byName)).skill;
  } catch (error) {
    if (error instanceof NotFoundError) throw ValidationError.of('skill_name', `no skill is registered as '${byName}'`, 'UNKNOWN_SKILL');
    throw error;
  }
}

/** The domain skill of a loom.v1.Skill, through the workflow converters (one place maps capabilities and parameters). */
function skillOf(message: SkillMessage): Skill {
  const workflow = workflowFromProto({ name: 'skill', autoStart: false, components: [], links: [], resources: [], skills: [message], workflowResources: [] });
  const [skill] = workflow.skills;
  return skill as Skill;
}

function skillToProto(skill: Skill): SkillMessage {
  return workflowToProto({ name: 'skill', autoStart: false, components: [], links: [], resources: [], skills: [skill], workflowResources: [] })
    .skills[0] as SkillMessage;
}

/**
 * Registers (or replaces) the skills of `loom.skills.register.<name>`: the configuration is what
 * those names mean, so a changed URL takes effect at the next start. A registration that breaks
 * the capability's rules stops the start, naming the key and the field.
 */
export async function registerConfiguredSkills(registrations: LoomConfig['skills']['register'], registry: SkillRegistry, logger: Logger): Promise<void> {
  for (const [name, fields] of Object.entries(registrations)) {
    const key = `loom.skills.register.${name}`;
    let skill;
    try {
      skill = checkRegistration({ ...(fields as Partial<Skill>), name } as Skill);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      const detail = error.violations.map((violation) => `${violation.field.replace(/^skill\.?/, '') || 'value'}: ${violation.description}`).join('; ');
      throw new ConfigError(`${key}: ${detail}`, { key });
    }
    await registry.register(skill, true);
    logger.info({ skill: name, capability: skill.capability, url: skill.url }, 'skill registered from the configuration');
  }
}

/** What a test may replace: the clock the skills' circuits read (milliseconds since the epoch). */
export interface SkillGatewayTestHooks {
  readonly now?: () => number;
}

/** Builds the skill gateway of a process: its registry storage, its skill caller and its RPCs. */
export async function createSkillGatewayInstance(
  { config, logger, localHttp }: ServiceContext<'skills' | 'embedded'>,
  hooks: SkillGatewayTestHooks = {},
): Promise<ServiceInstance> {
  const storage = await openSkillStorage(config, logger);
  const registry = new SkillRegistry(storage.db, config.skills.registry.cacheMs);
  // skills served by this process are called in memory unless loom.skills.inProcess is false
  const caller = new SkillCaller(callPolicyOf(config), logger, hooks.now, config.skills.inProcess ? localHttp : undefined);
  const implementation = skillGatewayImplementation({ registry, caller, logger });
  logger.info({ registry: storage.target.address }, 'skill registry ready');
  try {
    await registerConfiguredSkills(config.skills.register, registry, logger);
  } catch (error) {
    caller.close();
    await storage.close();
    throw error;
  }
  return {
    addToServer(server) {
      server.addService('loom.v1.SkillGateway', SkillGatewayService, implementation);
    },
    async close() {
      caller.close();
      await storage.close();
    },
  };
}

/** loom.v1.SkillGateway, deployable alone (`loom serve --services skill-gateway`) or with the others. */
export const skillGatewayModule: ServiceModule<'skills' | 'embedded'> = {
  name: 'skill-gateway',
  fullName: 'loom.v1.SkillGateway',
  configSections: ['skills', 'embedded'],
  create: (context) => createSkillGatewayInstance(context),
};
