import { type Span } from '@opentelemetry/api';
import { type Logger } from '@loom/telemetry';

/** A JSON schema (draft-07, as fastify's ajv reads it). */
export type JsonSchema = Record<string, unknown>;

/** What a route handler receives. */
export interface SkillRequest {
  /** The parsed body: a JSON value, or a Buffer for a binary media type. */
  readonly body: unknown;
  /**
   * A JSON body's text as it was read (it passed the same checks as `body`). For work handed to a worker thread: a
   * string crosses threads as one copy, where a parsed body is cloned object by object (a 24 KB annotation: 0.05 ms a
   * post as text, 0.1 ms as a value).
   */
  readonly text?: string;
  /** Media type of the body, lower case, without parameters. */
  readonly mediaType: string;
  /** Aborted when the request's time limit passes or the caller goes away. */
  readonly signal: AbortSignal;
  /** The request's logger (its lines carry the trace ids). */
  readonly logger: Logger;
  /** The request's server span, for attributes and child spans. */
  readonly span: Span;
}

/** One endpoint of a skill service. */
export interface SkillRoute {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly summary: string;
  readonly description?: string;
  /** Schema of a JSON body, checked before the handler runs. */
  readonly body?: JsonSchema;
  /** Media types of the body the route reads; default `application/json`. */
  readonly consumes?: readonly string[];
  /** Schema of a successful (200) answer, for the OpenAPI document. */
  readonly response: JsonSchema;
  /** Error statuses the route can answer beyond 400, 413, 415 and 503, for the OpenAPI document. */
  readonly errors?: readonly number[];
  /** The work: the answer as a value, or as JsonText already written; throw a SkillError for a failure the caller can act on. */
  handler(request: SkillRequest): Promise<unknown>;
}

/** A skill service's endpoints and resources, built by its module. */
export interface SkillDefinition {
  /** The skill's name, e.g. `annotation`; the service is `loom-skill-<name>`. */
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly version: string;
  readonly routes: readonly SkillRoute[];
  /** Fields added to the `/health` answer. */
  health?(): Record<string, unknown>;
  /** Releases what the definition holds (worker threads, files); called once, after the server stopped. */
  close?(): Promise<void>;
}

/** An answer already written as JSON (in a worker thread): sent as it is, not serialised again. */
export class JsonText {
  constructor(readonly text: string) {}
}
