import { setTimeout as sleep } from 'node:timers/promises';
import { status } from '@grpc/grpc-js';
import { type LoomConfig } from '@loom/config';
import { type Skill } from '@loom/domain';
import { attemptSignal, type LocalHttpServers, restartDelayMs } from '@loom/foundation';
import { type Logger, TELEMETRY_SCOPE } from '@loom/telemetry';
import { context as otelContext, type Context, metrics, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { type Pool } from 'undici';
import { type Admission, CircuitBreaker, type CircuitStateName } from './circuit-breaker.js';
import { ConcurrencyLimit } from './concurrency-limit.js';
import { httpPost, skillPool } from './http-post.js';

/** One HTTP request to a skill. */
export interface SkillCall {
  /** The request body as sent. */
  readonly body: Uint8Array;
  /** Default `application/json`. */
  readonly contentType?: string;
  /** W3C trace context of the message the call is for; the call's span becomes its child. */
  readonly traceHeaders?: Readonly<Record<string, string>>;
  /** A path under the skill's base url (baseUrlOf): `/pipeline/new`. */
  readonly path?: string;
}

/** What became of one call (as loom.v1.SkillResult). */
export interface SkillCallResult {
  readonly code: status;
  readonly message: string;
  readonly body: Uint8Array;
  readonly contentType: string;
  readonly httpStatus: number;
  readonly attempts: number;
  readonly latencyMs: number;
  /** What the last attempt got (`HTTP 400: <the skill's message>`, `connection failed (ECONNREFUSED)`, `timed out`); empty on OK or when none was made. */
  readonly cause: string;
}

/** How the gateway calls skills, from `loom.skills.*`. */
export interface CallPolicy {
  readonly timeoutMs: (skill: Skill) => number;
  readonly maxConcurrency: (skill: Skill) => number;
  readonly retries: number;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  readonly breaker: { readonly failureThreshold: number; readonly openMs: number };
}

/** The call policy of a configuration: per-skill time-outs and caps by name, keyword extraction's own default cap. */
export function callPolicyOf(config: Pick<LoomConfig, 'skills'>): CallPolicy {
  const { skills } = config;
  return {
    timeoutMs: (skill) => skills.timeouts[skill.name] ?? skills.timeoutMs,
    maxConcurrency: (skill) =>
      skills.concurrency[skill.name] ?? (skill.capability === 'KEYWORD_EXTRACTION' ? skills.keywordExtraction.maxConcurrency : skills.maxConcurrency),
    retries: skills.retries,
    backoff: skills.backoff,
    breaker: skills.breaker,
  };
}

/** The state kept per skill: its circuit, its cap, and a keep-alive connection pool no larger than the cap. */
interface SkillState {
  readonly origin: string;
  readonly breaker: CircuitBreaker;
  readonly limit: ConcurrencyLimit;
  readonly pool: Pool;
}

const CIRCUIT_GAUGE_VALUES: Record<CircuitStateName, number> = { CLOSED: 0, HALF_OPEN: 1, OPEN: 2 };
const MAX_MESSAGE_CHARS = 500;
const JITTER = 0.5;

/** Metric and span attribute naming the skill. */
export const ATTR_SKILL_NAME = 'loom.skill.name';

/** How one attempt ended. */
type Attempt =
  | { readonly kind: 'answer'; readonly httpStatus: number; readonly body: Uint8Array; readonly contentType: string; readonly retryAfterMs: number | undefined }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'connection'; readonly reason: string }
  | { readonly kind: 'cancelled' };

/**
 * Calls skills over HTTP (undici's dispatcher, httpPost) with, per skill: a time-out per attempt; retries with capped, jittered
 * backoff on connection errors, time-outs, 429 and 5xx (a Retry-After up to the cap is honoured), never on other
 * 4xx or a 3xx (redirects are not followed); a circuit breaker counting failed attempts; a cap on attempts under way at once (and a keep-alive pool of as
 * many connections, so a timed-out attempt's connection is closed before another takes its place). Each attempt is
 * an HTTP client span, child of the message's trace context, whose `traceparent` goes to the skill. A skill served by
 * this process (`localHttp`: `loom serve --with-skills`) is posted to in memory instead of over its socket, with all of
 * the above unchanged; its spans say `network.transport: inproc`.
 */
export class SkillCaller {
  private readonly states = new Map<string, SkillState>();
  private readonly tracer = trace.getTracer(TELEMETRY_SCOPE);
  private readonly meter = metrics.getMeter(TELEMETRY_SCOPE);
  private readonly calls = this.meter.createCounter('loom.skill.calls', { description: 'skill calls by skill and outcome (gRPC code name)' });
  private readonly errors = this.meter.createCounter('loom.skill.errors', { description: 'skill calls that did not end OK, by skill and code' });
  private readonly attempts = this.meter.createCounter('loom.skill.attempts', { description: 'HTTP requests sent to skills, retries included' });
  private readonly duration = this.meter.createHistogram('loom.skill.call.duration', { description: 'duration of skill calls, retries included', unit: 'ms' });

  constructor(
    private readonly policy: CallPolicy,
    private readonly logger: Logger,
    /** The clock the circuits read (milliseconds since the epoch); a test moves its own. */
    private readonly now: () => number = Date.now,
    /** The skill servers of this process, called in memory; none when absent. */
    private readonly localHttp?: LocalHttpServers,
  ) {
    this.meter
      .createObservableGauge('loom.skill.circuit.state', { description: 'circuit of each skill: 0 closed, 1 half-open, 2 open' })
      .addCallback((result) => {
        for (const [name, state] of this.states) result.observe(CIRCUIT_GAUGE_VALUES[state.breaker.state], { [ATTR_SKILL_NAME]: name });
      });
    this.meter.createObservableGauge('loom.skill.in_flight', { description: 'calls under way to each skill from this gateway' }).addCallback((result) => {
      for (const [name, state] of this.states) result.observe(state.limit.inUse, { [ATTR_SKILL_NAME]: name });
    });
  }

  /** Circuit state, calls under way and cap of a skill (CLOSED, 0 for one not called yet). */
  describe(skill: Skill): { circuit: CircuitStateName; inFlight: number; maxConcurrency: number } {
    const state = this.states.get(skill.name);
    return {
      circuit: state?.breaker.state ?? 'CLOSED',
      inFlight: state?.limit.inUse ?? 0,
      maxConcurrency: state?.limit.limit ?? this.policy.maxConcurrency(skill),
    };
  }

  /** Calls a skill with time-out, retries, circuit breaker and cap; never throws for the skill's failures. */
  async call(skill: Skill, request: SkillCall, signal: AbortSignal): Promise<SkillCallResult> {
    const started = performance.now();
    const result = await this.attemptAll(skill, request, signal, started);
    const attributes = { [ATTR_SKILL_NAME]: skill.name, 'rpc.grpc.status_code': status[result.code] };
    this.calls.add(1, attributes);
    if (result.code !== status.OK) this.errors.add(1, attributes);
    this.duration.record(result.latencyMs, { [ATTR_SKILL_NAME]: skill.name });
    return result;
  }

  /** Closes every connection pool. */
  close(): void {
    for (const state of this.states.values()) void state.pool.destroy();
    this.states.clear();
  }

  private async attemptAll(skill: Skill, request: SkillCall, signal: AbortSignal, started: number): Promise<SkillCallResult> {
    const state = this.stateOf(skill);
    const url = request.path === undefined || request.path === '' ? skill.url : joinPath(skill.url, request.path);
    const parent = request.traceHeaders === undefined ? otelContext.active() : propagation.extract(otelContext.active(), request.traceHeaders);
    let last: Attempt | undefined;
    const done = (code: status, message: string, attempts: number, answer?: Extract<Attempt, { kind: 'answer' }>): SkillCallResult => ({
      code,
      message,
      body: answer?.body ?? new Uint8Array(),
      contentType: answer?.contentType ?? '',
      httpStatus: answer?.httpStatus ?? 0,
      attempts,
      latencyMs: performance.now() - started,
      cause: code === status.OK || last === undefined ? '' : describeAttempt(last),
    });

    for (let attempt = 0; attempt <= this.policy.retries; attempt++) {
      if (attempt > 0) {
        const retryAfter = last?.kind === 'answer' ? last.retryAfterMs : undefined;
        const delay = Math.min(
          this.policy.backoff.maxMs,
          retryAfter ?? restartDelayMs({ initialDelayMs: this.policy.backoff.initialMs, maxDelayMs: this.policy.backoff.maxMs, jitter: JITTER }, attempt),
        );
        try {
          await sleep(delay, undefined, { signal });
        } catch {
          return done(status.CANCELLED, `call to skill '${skill.name}' cancelled`, attempt);
        }
      }
      // the circuit is asked once a place is free, so an attempt that waited behind others sees its current state
      let release: () => void;
      try {
        release = await state.limit.acquire(signal);
      } catch {
        return done(status.CANCELLED, `call to skill '${skill.name}' cancelled`, attempt);
      }
      const admission = state.breaker.admit();
      if (admission === 'refuse') {
        release();
        const why = last === undefined ? '' : ` (last attempt: ${describeAttempt(last)})`;
        return done(status.UNAVAILABLE, `skill '${skill.name}' is unavailable: its circuit is open after repeated failures${why}`, attempt);
      }
      try {
        last = await this.attempt(skill, url, request, state, attempt, parent, signal);
      } finally {
        release();
      }
      this.judge(state.breaker, admission, last);
      if (last.kind === 'cancelled') return done(status.CANCELLED, `call to skill '${skill.name}' cancelled`, attempt + 1);
      if (last.kind === 'answer' && last.httpStatus < 300) return done(status.OK, '', attempt + 1, last);
      if (last.kind === 'answer' && last.httpStatus !== 429 && last.httpStatus < 500) {
        return done(status.INVALID_ARGUMENT, `skill '${skill.name}' refused the request: ${describeAttempt(last)}`, attempt + 1, last);
      }
    }
    const attempts = this.policy.retries + 1;
    const final = last as Attempt;
    const after = `after ${attempts} attempt${attempts === 1 ? '' : 's'}`;
    if (final.kind === 'timeout')
      return done(status.DEADLINE_EXCEEDED, `skill '${skill.name}' did not answer within ${this.policy.timeoutMs(skill)} ms ${after}`, attempts);
    return done(
      status.UNAVAILABLE,
      `skill '${skill.name}' is unavailable ${after}: ${describeAttempt(final)}`,
      attempts,
      final.kind === 'answer' ? final : undefined,
    );
  }

  private judge(breaker: CircuitBreaker, admission: Admission, attempt: Attempt): void {
    if (attempt.kind === 'cancelled') breaker.abandoned(admission);
    else if (attempt.kind === 'answer' && attempt.httpStatus !== 429 && attempt.httpStatus < 500) breaker.succeeded(admission);
    else breaker.failed(admission);
  }

  private async attempt(
    skill: Skill,
    url: string,
    request: SkillCall,
    state: SkillState,
    resendCount: number,
    parent: Context,
    signal: AbortSignal,
  ): Promise<Attempt> {
    const target = new URL(url);
    const local = this.localHttp?.(target.origin);
    const span = this.tracer.startSpan(
      `POST ${target.pathname}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': 'POST',
          'url.full': `${target.origin}${target.pathname}`,
          'server.address': target.hostname,
          'server.port': Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
          [ATTR_SKILL_NAME]: skill.name,
          ...(resendCount > 0 ? { 'http.request.resend_count': resendCount } : {}),
          ...(local === undefined ? {} : { 'network.transport': 'inproc' }),
        },
      },
      parent,
    );
    const headers: Record<string, string> = {
      'content-type': request.contentType === undefined || request.contentType === '' ? 'application/json' : request.contentType,
      accept: 'application/json',
    };
    propagation.inject(trace.setSpan(parent, span), headers);
    const until = attemptSignal(signal, this.policy.timeoutMs(skill));
    this.attempts.add(1, { [ATTR_SKILL_NAME]: skill.name });
    let outcome: Attempt;
    try {
      const answer =
        local === undefined
          ? await httpPost({ url: target, headers, body: request.body, pool: state.pool, signal: until.signal })
          : await local.post({ path: `${target.pathname}${target.search}`, headers, body: request.body, signal: until.signal });
      const { 'content-type': contentType, 'retry-after': retryAfter } = answer.headers;
      outcome = {
        kind: 'answer',
        httpStatus: answer.status,
        body: answer.body,
        contentType: typeof contentType === 'string' ? contentType : '',
        retryAfterMs: retryAfterMs(typeof retryAfter === 'string' ? retryAfter : undefined),
      };
    } catch (error) {
      if (signal.aborted) outcome = { kind: 'cancelled' };
      else if (until.timedOut()) outcome = { kind: 'timeout' };
      else outcome = { kind: 'connection', reason: reasonOf(error) };
    } finally {
      until.release();
    }
    if (outcome.kind === 'answer') {
      span.setAttribute('http.response.status_code', outcome.httpStatus);
      if (outcome.httpStatus >= 400) {
        span.setAttribute('error.type', String(outcome.httpStatus));
        span.setStatus({ code: SpanStatusCode.ERROR, message: describeAttempt(outcome) });
      }
    } else {
      span.setAttribute('error.type', outcome.kind === 'connection' ? outcome.reason : outcome.kind);
      span.setStatus({ code: SpanStatusCode.ERROR, message: describeAttempt(outcome) });
    }
    span.end();
    if (outcome.kind !== 'answer' || outcome.httpStatus >= 500 || outcome.httpStatus === 429) {
      this.logger.debug({ skill: skill.name, attempt: resendCount + 1, outcome: describeAttempt(outcome) }, 'skill attempt failed');
    }
    return outcome;
  }

  private stateOf(skill: Skill): SkillState {
    const origin = new URL(skill.url).origin;
    const known = this.states.get(skill.name);
    const cap = this.policy.maxConcurrency(skill);
    if (known !== undefined && known.origin === origin && known.limit.limit === cap) return known;
    if (known !== undefined) void known.pool.destroy();
    const state: SkillState = {
      origin,
      breaker:
        known?.breaker ??
        new CircuitBreaker(this.policy.breaker, this.now, (next) =>
          this.logger.info({ skill: skill.name, circuit: next }, `circuit of skill '${skill.name}' is ${next}`),
        ),
      limit: known?.limit.limit === cap ? known.limit : new ConcurrencyLimit(cap),
      pool: skillPool(origin, cap),
    };
    this.states.set(skill.name, state);
    return state;
  }
}

/** What an attempt's failure was, for messages: the skill's own message for an answer, capped. */
export function describeAttempt(attempt: Attempt): string {
  switch (attempt.kind) {
    case 'timeout':
      return 'timed out';
    case 'cancelled':
      return 'cancelled';
    case 'connection':
      return `connection failed (${attempt.reason})`;
    case 'answer': {
      const said = skillMessage(attempt.body);
      return `HTTP ${attempt.httpStatus}${said === '' ? '' : `: ${said}`}`;
    }
  }
}

/** The message of a skill's error body: `message` or `error` of a JSON object, or the text itself, capped. */
function skillMessage(body: Uint8Array): string {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8').trim();
  if (text === '') return '';
  let said = text;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null) {
      const { message, error, field } = parsed as { message?: unknown; error?: unknown; field?: unknown };
      const main = typeof message === 'string' ? message : typeof error === 'string' ? error : text;
      said = typeof field === 'string' ? `${main} (field ${field})` : main;
    }
  } catch {
    said = text; // not JSON: the text is the message
  }
  return said.length > MAX_MESSAGE_CHARS ? `${said.slice(0, MAX_MESSAGE_CHARS)}…` : said;
}

/** Retry-After in ms (seconds or an HTTP date); undefined when absent or unreadable. */
function retryAfterMs(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Why a connection failed: its code (ECONNREFUSED), never the message (it may quote the URL). */
function reasonOf(error: unknown): string {
  if (error instanceof Error) return 'code' in error && typeof error.code === 'string' ? error.code : error.name;
  return 'unknown error';
}

/** A skill's url without its endpoint (`/annotate`, `/v2/annotate`, `/extractKeywords` and what follows it). */
export function baseUrlOf(url: string): URL {
  const parsed = new URL(url);
  parsed.pathname = parsed.pathname
    .replace(/(\/v2)?\/annotate\/?$/, '')
    .replace(/\/extractKeywords(\/.*)?$/, '')
    .replace(/\/+$/, '');
  parsed.search = '';
  parsed.hash = '';
  return parsed;
}

/**
 * Where a skill may publish its health, in the order to ask: beside its endpoint (`<base url>/health`,
 * as the annotation and keyword skills do), then under each shorter path down to the server's root
 * (`/health`: the PDF and web data skills, registered at `/parse` and `/extract`, publish it there).
 */
export function healthProbeUrls(url: string): URL[] {
  const base = baseUrlOf(url);
  const segments = base.pathname.split('/').filter((segment) => segment !== '');
  return segments
    .map((_segment, index) => segments.length - index)
    .concat(0)
    .map((kept) => {
      const probe = new URL(base.toString());
      probe.pathname = `/${[...segments.slice(0, kept), 'health'].join('/')}`;
      return probe;
    });
}

function joinPath(url: string, path: string): string {
  const base = baseUrlOf(url);
  base.pathname = `${base.pathname.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
  return base.toString();
}
