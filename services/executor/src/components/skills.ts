import { status } from '@grpc/grpc-js';
import { type Failure, type Skill as SkillMessage, type SkillGatewayClient, type SkillRequest, type SkillResult } from '@loom/contracts';
import {
  annotationEndpoint,
  entitiesOf,
  type ErrorKind,
  FailedPreconditionError,
  isAnnotation,
  LoomError,
  mergedEntitiesOf,
  type Skill,
  type SkillCapabilityName,
  skillViolations,
  ValidationError,
  type WorkflowConfiguration,
} from '@loom/domain';
import { workflowFromProto, workflowToProto } from '@loom/domain/proto';
import { call, isErrorKind } from '@loom/service-kit';
import { type ComponentContext, type ComponentFactory, type LoomMessage, type Outcome, outcome, type Processor } from '../runtime/component.js';
import { TRACE_HEADERS } from '../runtime/tracing.js';

/** How skill components reach the skill gateway (resolved at first use: the server's own port is known only once it listens). */
export type SkillGatewayProvider = () => SkillGatewayClient;

/** A skill component's request for one message, or why the message cannot be sent. */
type Prepared = { readonly ok: true; readonly request: SkillRequest } | { readonly ok: false; readonly error: string };

/** What one capability does around the skill call. */
interface SkillAdapter {
  /** The request for a message; a missing or wrong input field fails only that message, naming it. */
  prepare(message: LoomMessage): Prepared;
  /** The outgoing message from the skill's parsed answer (`json`: the bytes it was parsed from), or why the answer cannot be used. */
  apply(message: LoomMessage, answer: unknown, json: Buffer): Outcome;
}

/**
 * The JSON a skill answered, by the annotation parsed from it: the keyword component sends these bytes on instead of
 * writing the annotation again (one parse and no serialisation a document). The annotation is deep-frozen when it is
 * kept here, so no component can change it behind its bytes; one that makes a new annotation (a script's copy, a message
 * read back from JetStream) is not found here and is written as JSON.
 */
const annotationJson = new WeakMap<object, Buffer>();

/** Freezes an annotation whole and keeps the JSON it was parsed from (annotationJson). */
function keepAnnotation<T extends object>(annotation: T, json: Buffer): T {
  deepFreeze(annotation);
  annotationJson.set(annotation, json);
  return annotation;
}

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  // indexes and for-in rather than Object.values: no array made for each of the annotation's thousands of objects
  // (a third of the CPU on a 43 KB annotation, docs/benchmarks.md); a parsed annotation inherits nothing enumerable
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) deepFreeze(value[index]);
  } else {
    const record = value as Record<string, unknown>;
    for (const key in record) deepFreeze(record[key]);
  }
}

const JSON_TYPE = 'application/json';
const PDF_TYPE = 'application/pdf';

/** Field names of a skill component: `skillConfiguration.inputs/outputs` over the specification's defaults. */
function fieldOf(context: ComponentContext, side: 'inputs' | 'outputs', names: readonly string[], fallback: string | undefined): string | undefined {
  const mapping = context.instance.skillConfiguration[side];
  for (const name of names) {
    if (!Object.hasOwn(mapping, name)) continue;
    const value = mapping[name];
    // null switches an output off; an input must name a field
    if (value === null && side === 'outputs') return undefined;
    if (typeof value !== 'string' || value.trim() === '') {
      throw ValidationError.of(
        `${context.name}.skillConfiguration.${side}.${name}`,
        side === 'inputs' ? 'must name a message field' : 'must name a message field, or be null to leave the output out',
        'INVALID_VALUE',
      );
    }
    return value;
  }
  return fallback;
}

function jsonBody(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

function traceHeadersOf(message: LoomMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of TRACE_HEADERS) {
    const value = message.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

function request(message: LoomMessage, body: Buffer, contentType = JSON_TYPE): Prepared {
  return { ok: true, request: { body, contentType, traceHeaders: traceHeadersOf(message), path: '' } };
}

function withFields(message: LoomMessage, fields: Record<string, unknown>): LoomMessage {
  return { id: message.id, headers: message.headers, body: { ...message.body, ...fields } };
}

function missing(field: string, what: string): Prepared {
  return { ok: false, error: `the message has no field '${field}' (${what})` };
}

/**
 * Entity extraction: posts `{text, pipeline}` to the skill's `/annotate` or `/v2/annotate`; writes the answer to
 * `_annotation`, and `_entities` and `_merged_entities` derived from it (libs/domain entities.ts): `_entities`
 * merges consecutive tokens of one type unless the url is `/v2/annotate`, `_merged_entities` always does.
 */
function entityExtraction(context: ComponentContext, skill: Skill): SkillAdapter {
  const input = fieldOf(context, 'inputs', ['text'], 'text') as string;
  const annotationField = fieldOf(context, 'outputs', ['annotation'], '_annotation');
  const entitiesField = fieldOf(context, 'outputs', ['entities'], '_entities');
  const mergedField = fieldOf(context, 'outputs', ['mergedEntities', 'merged_entities', 'merged entities'], '_merged_entities');
  const merge = annotationEndpoint(skill.url) !== 'v2';
  return {
    prepare(message) {
      const text = message.body[input];
      if (text === undefined || text === null) return missing(input, 'the text to annotate');
      if (typeof text !== 'string') return { ok: false, error: `field '${input}' must be a string (the text to annotate)` };
      return request(message, jsonBody({ text, pipeline: skill.pipeline ?? 'default' }));
    },
    apply(message, answer, json) {
      if (!isAnnotation(answer)) return outcome.fail(`skill '${skill.name}' answered something that is not an annotation (no sentences with tokens)`);
      const fields: Record<string, unknown> = {};
      if (annotationField !== undefined) fields[annotationField] = keepAnnotation(answer, json);
      if (entitiesField !== undefined) fields[entitiesField] = entitiesOf(answer, merge);
      if (mergedField !== undefined) fields[mergedField] = mergedEntitiesOf(answer);
      return outcome.emit(withFields(message, fields));
    },
  };
}

/** Keyword extraction: posts `{annotatedText, ...parameters}`; writes `[{value, relevance}]` to `_keywords`. */
function keywordExtraction(context: ComponentContext, skill: Skill): SkillAdapter {
  const input = fieldOf(context, 'inputs', ['annotatedText', 'annotated text'], undefined);
  if (input === undefined) {
    throw ValidationError.of(
      `${context.name}.skillConfiguration.inputs.annotatedText`,
      'is required: the message field holding the annotation (an entity extraction output)',
      'MISSING_FIELD',
    );
  }
  const output = fieldOf(context, 'outputs', ['keywords', 'keyword results'], '_keywords');
  // `{...parameters, "annotatedText": ` and `}` around an annotation's own JSON (annotationJson)
  const { annotatedText: _replaced, ...parameters } = skill.parameters ?? {};
  const head = JSON.stringify(parameters);
  const before = Buffer.from(`${head.slice(0, -1)}${head === '{}' ? '' : ','}"annotatedText":`);
  const after = Buffer.from('}');
  return {
    prepare(message) {
      const annotation = message.body[input];
      if (annotation === undefined || annotation === null) return missing(input, 'the annotation to extract keywords from');
      const json = typeof annotation === 'object' ? annotationJson.get(annotation) : undefined;
      if (json !== undefined) return request(message, Buffer.concat([before, json, after]));
      return request(message, jsonBody({ ...skill.parameters, annotatedText: annotation }));
    },
    apply(message, answer) {
      const list = Array.isArray(answer) ? answer : keywordsIn(answer);
      if (list === undefined || !list.every(isKeyword))
        return outcome.fail(`skill '${skill.name}' answered something that is not a list of {value, relevance}`);
      return outcome.emit(output === undefined ? message : withFields(message, { [output]: list.map(({ value, relevance }) => ({ value, relevance })) }));
    },
  };
}

function keywordsIn(answer: unknown): unknown[] | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined;
  const { _keywords, keywords } = answer as { _keywords?: unknown; keywords?: unknown };
  const found = _keywords ?? keywords;
  return Array.isArray(found) ? found : undefined;
}

function isKeyword(value: unknown): value is { value: string; relevance: number } {
  if (typeof value !== 'object' || value === null) return false;
  const { value: text, relevance } = value as { value?: unknown; relevance?: unknown };
  return typeof text === 'string' && typeof relevance === 'number';
}

/** Web data extraction: posts `{url}`; writes `{top_image, movies, text, keywords, authors, publish_date}` to the output field. */
function webDataExtraction(context: ComponentContext, skill: Skill): SkillAdapter {
  const input = fieldOf(context, 'inputs', ['url', 'URL to extract'], 'url') as string;
  const output = fieldOf(context, 'outputs', ['data', 'parsedData', 'Parsed Data'], '_parsed_data');
  return {
    prepare(message) {
      const url = message.body[input];
      if (url === undefined || url === null) return missing(input, 'the URL to extract');
      if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) return { ok: false, error: `field '${input}' must be an http or https URL` };
      return request(message, jsonBody({ url }));
    },
    apply(message, answer) {
      const data = typeof answer === 'object' && answer !== null && 'data' in answer ? answer.data : answer;
      if (typeof data !== 'object' || data === null || Array.isArray(data)) return outcome.fail(`skill '${skill.name}' answered no parsed data object`);
      const parsed = data as Record<string, unknown>;
      const normalised = {
        top_image: typeof parsed.top_image === 'string' ? parsed.top_image : '',
        movies: Array.isArray(parsed.movies) ? parsed.movies : [],
        text: typeof parsed.text === 'string' ? parsed.text : '',
        keywords: Array.isArray(parsed.keywords) ? parsed.keywords.filter((keyword) => typeof keyword === 'string') : [],
        authors: Array.isArray(parsed.authors) ? parsed.authors.filter((author) => typeof author === 'string') : [],
        publish_date: localDateTime(parsed.publish_date),
      };
      return outcome.emit(output === undefined ? message : withFields(message, { [output]: normalised }));
    },
  };
}

/** ISO 8601 without offset (`2024-05-01T09:30:00`): a date with a zone is given in UTC; null when absent or unreadable. */
export function localDateTime(value: unknown): string | null {
  if (typeof value !== 'string' || value.trim() === '') return null;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/.test(value)) return value;
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return `${value}T00:00:00`;
  const time = Date.parse(value);
  return Number.isNaN(time)
    ? null
    : new Date(time)
        .toISOString()
        .replace(/\.\d{3}Z$/, '')
        .replace(/Z$/, '');
}

/** PDF parsing: sends base64 bytes as `application/pdf`, or `{url}` for the skill to fetch; writes the text and the per-page text. */
function pdfParsing(context: ComponentContext, skill: Skill): SkillAdapter {
  const input = fieldOf(context, 'inputs', ['pdf', 'file', 'url'], 'pdf') as string;
  const textField = fieldOf(context, 'outputs', ['text'], '_text');
  const pagesField = fieldOf(context, 'outputs', ['pages'], '_pages');
  return {
    prepare(message) {
      const pdf = message.body[input];
      if (pdf === undefined || pdf === null) return missing(input, 'the PDF: base64 bytes or a URL');
      if (typeof pdf !== 'string') return { ok: false, error: `field '${input}' must be a string: base64 bytes of the PDF, or its URL` };
      if (/^https?:\/\//i.test(pdf)) return request(message, jsonBody({ url: pdf }));
      if (!/^[A-Za-z0-9+/\s]+={0,2}\s*$/.test(pdf)) return { ok: false, error: `field '${input}' is neither base64 nor an http or https URL` };
      return request(message, Buffer.from(pdf, 'base64'), PDF_TYPE);
    },
    apply(message, answer) {
      if (typeof answer !== 'object' || answer === null || typeof (answer as { text?: unknown }).text !== 'string') {
        return outcome.fail(`skill '${skill.name}' answered no text`);
      }
      const { text, pages } = answer as { text: string; pages?: unknown };
      const fields: Record<string, unknown> = {};
      if (textField !== undefined) fields[textField] = text;
      if (pagesField !== undefined) fields[pagesField] = Array.isArray(pages) ? pages : [];
      return outcome.emit(withFields(message, fields));
    },
  };
}

const ADAPTERS: Record<SkillCapabilityName, (context: ComponentContext, skill: Skill) => SkillAdapter> = {
  ENTITY_EXTRACTION: entityExtraction,
  KEYWORD_EXTRACTION: keywordExtraction,
  WEB_DATA_EXTRACTION: webDataExtraction,
  PDF_PARSING: pdfParsing,
};

/**
 * Most messages one InvokeSkillBatch carries. The batch is one call with one deadline: a skill answering 10 documents a
 * second (a loaded machine) must finish it well inside that, and a retried batch resends only this many.
 */
export const SKILL_BATCH_SIZE = 32;

/** A skill call that failed, as the skill gateway typed it (loom.v1.Failure): its kind and retryable flag, and what the last attempt got. */
export class SkillCallError extends LoomError {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    retryable: boolean,
  ) {
    super(message, { retryable });
  }
}

/**
 * The outcome of a failed skill result: the gateway's message, retried when its failure is retryable, and the typed error
 * behind it (its kind reaches the failure handler, the audit log and WatchRun). A kind this executor does not know is
 * left out, so the failure's kind follows from its retryable flag.
 */
function failedOutcome(failure: Failure): Outcome {
  const said = failure.cause === '' ? failure.message : failure.cause;
  return outcome.fail(failure.message, failure.retryable, isErrorKind(failure.kind) ? new SkillCallError(failure.kind, said, failure.retryable) : undefined);
}

/** A result that failed without its typed failure (not one a gateway of this version sends): unavailable, and tried again. */
function untypedFailure(result: SkillResult): Failure {
  return {
    kind: 'unavailable',
    retryable: true,
    message: result.message === '' ? `the skill gateway answered code ${result.code}` : result.message,
    cause: '',
  };
}

/**
 * A skill component: takes a batch of messages (at most SKILL_BATCH_SIZE), sends the skill one request per message in one InvokeSkillBatch
 * (the gateway runs them concurrently within the skill's cap, with its time-out, retries and circuit breaker), and
 * maps each result back: OK to the message with the outputs, a refusal (INVALID_ARGUMENT) to a failure for good,
 * anything else (unavailable, an open circuit, a time-out, the gateway out of reach) to a transient failure that
 * the runtime retries `max_retry` times `delay` ms apart before the failure handler.
 */
class SkillProcessor implements Processor {
  /** What is waiting, up to SKILL_BATCH_SIZE, without waiting for more. */
  readonly batching = { size: SKILL_BATCH_SIZE, gatherMs: 0 };

  constructor(
    private readonly skill: Skill,
    private readonly adapter: SkillAdapter,
    private readonly gateway: SkillGatewayProvider,
  ) {}

  async process(batch: readonly LoomMessage[], signal: AbortSignal): Promise<readonly Outcome[]> {
    const outcomes: (Outcome | undefined)[] = batch.map(() => undefined);
    const sent: { index: number; request: SkillRequest }[] = [];
    batch.forEach((message, index) => {
      const prepared = this.adapter.prepare(message);
      if (prepared.ok) sent.push({ index, request: prepared.request });
      else outcomes[index] = outcome.fail(prepared.error);
    });
    if (sent.length > 0) {
      let results: SkillResult[];
      try {
        ({ results } = await call(
          this.gateway(),
          'invokeSkillBatch',
          { skillName: '', skill: skillToProto(this.skill), requests: sent.map((entry) => entry.request) },
          { signal },
        ));
      } catch (error) {
        const reason = error instanceof Error && 'details' in error ? String((error as { details: unknown }).details) : String(error);
        for (const { index } of sent) outcomes[index] = outcome.fail(`skill gateway call failed: ${reason}`, true, error);
        return outcomes as Outcome[];
      }
      sent.forEach(({ index }, position) => {
        outcomes[index] = this.outcomeOf(batch[index] as LoomMessage, results[position]);
      });
    }
    return outcomes as Outcome[];
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private outcomeOf(message: LoomMessage, result: SkillResult | undefined): Outcome {
    if (result === undefined) return outcome.fail(`the skill gateway answered no result for message ${message.id}`, true);
    if (result.code !== Number(status.OK)) return failedOutcome(result.failure ?? untypedFailure(result));
    let answer: unknown = null;
    const text = result.body.toString('utf8');
    if (text.trim() !== '') {
      try {
        answer = JSON.parse(text) as unknown;
      } catch {
        return outcome.fail(`skill '${this.skill.name}' answered HTTP ${result.httpStatus} with a body that is not JSON`);
      }
    }
    return this.adapter.apply(message, answer, result.body);
  }
}

function skillToProto(skill: Skill): SkillMessage {
  return workflowToProto(oneSkillWorkflow(skill)).skills[0] as SkillMessage;
}

function oneSkillWorkflow(skill: Skill): WorkflowConfiguration {
  return { name: 'skill', autoStart: false, components: [], links: [], resources: [], skills: [skill], workflowResources: [] };
}

/** A skill a component names that the registry does not have, or has with another capability. */
export class SkillUnresolvedError extends FailedPreconditionError {}

/**
 * The skill a component calls, checked against its capability: given in full (name and url) it is used as written;
 * given by name only it is taken from the workflow's `skills` array, else from the gateway's registry (at start).
 */
export async function resolveSkill(
  context: ComponentContext,
  capability: SkillCapabilityName,
  gateway: SkillGatewayProvider,
  signal: AbortSignal,
): Promise<Skill> {
  const given = context.instance.skill;
  const path = `${context.name}.skill`;
  if (given === null) throw ValidationError.of(path, 'a skill component needs a skill: by name (a registered skill) or with name and url', 'MISSING_SKILL');
  let skill: Skill | undefined = given.url.trim() === '' ? undefined : given;
  skill ??= context.workflowSkills?.find((candidate) => candidate.name === given.name && candidate.url.trim() !== '');
  if (skill === undefined) {
    const { skills } = await call(gateway(), 'listSkills', {}, { signal });
    const found = skills.find((candidate) => candidate.name === given.name);
    if (found === undefined)
      throw new SkillUnresolvedError(`${path}: no skill is registered as '${given.name}' (register it with loom skill register, or give its url)`);
    const registered = workflowFromProto({ ...workflowToProto(oneSkillWorkflow(given)), skills: [found] }).skills[0] as Skill;
    if (registered.capability !== undefined && registered.capability !== capability) {
      throw new SkillUnresolvedError(`${path}: skill '${given.name}' is registered as ${registered.capability}, and this component needs ${capability}`);
    }
    // a workflow may name a registered skill and choose its pipeline (the `technology` pipeline of the examples)
    skill = given.pipeline !== undefined && given.pipeline.trim() !== '' ? { ...registered, pipeline: given.pipeline } : registered;
  }
  const checked: Skill = { ...skill, capability };
  const violations = skillViolations(checked, capability, path);
  if (violations.length > 0) throw new ValidationError(violations);
  return checked;
}

/** The component factory of a skill capability. */
export function skillFactory(capability: SkillCapabilityName, gateway: SkillGatewayProvider): ComponentFactory {
  return {
    kind: 'processor',
    async create(context) {
      const skill = await resolveSkill(context, capability, gateway, context.signal);
      const adapter = ADAPTERS[capability](context, skill);
      if (context.dryRun) context.logger.info({ skill: skill.name, url: skill.url }, `dry run: calls skill '${skill.name}' (a read)`);
      return new SkillProcessor(skill, adapter, gateway);
    },
  };
}

/** A stand-in skill's answer to one message: the skill's JSON answer, or a refusal (the message fails for good, as when the skill refuses it). */
export type StandInSkillAnswer = { readonly answer: unknown } | { readonly refusal: string };

/**
 * A skill component that takes its answers from `answerOf` (for the n-th message it would send, from 0) instead of calling the skill:
 * a workflow test's mocked answers. Each message is prepared and each answer applied as for a real call (a missing input
 * field fails the message, `_entities` are derived from an annotation), with no skill gateway and no network.
 */
export function standInSkillFactory(capability: SkillCapabilityName, answerOf: (message: LoomMessage, index: number) => StandInSkillAnswer): ComponentFactory {
  return {
    kind: 'processor',
    create(context) {
      const given = context.instance.skill;
      if (given === null) {
        return Promise.reject(
          ValidationError.of(`${context.name}.skill`, 'a skill component needs a skill: by name (a registered skill) or with name and url', 'MISSING_SKILL'),
        );
      }
      const adapter = ADAPTERS[capability](context, { ...given, capability });
      let taken = 0;
      const processor: Processor = {
        process: (batch) =>
          Promise.resolve(
            batch.map((message) => {
              const prepared = adapter.prepare(message);
              if (!prepared.ok) return outcome.fail(prepared.error);
              const answered = answerOf(message, taken++);
              if ('refusal' in answered) return outcome.fail(answered.refusal);
              // the answer as a skill's would arrive: its own JSON, parsed (the test's object is not frozen or shared)
              const json = jsonBody(answered.answer ?? null);
              return adapter.apply(message, JSON.parse(json.toString('utf8')) as unknown, json);
            }),
          ),
        close: () => Promise.resolve(),
      };
      return Promise.resolve(processor);
    },
  };
}
