import { isSpanContextValid, trace } from '@opentelemetry/api';
import { pino } from 'pino';
import { redactor as defaultRedactor, type SecretRedactor } from './secret-redactor.js';

/** The logger every loom package uses: pino, JSON lines. */
export type Logger = pino.Logger;

/** How `createLogger` builds a logger. */
export interface LoggerOptions {
  /** pino level name; default `info`. */
  level?: string;
  /** Where JSON lines go; stdout when absent. */
  destination?: pino.DestinationStream | NodeJS.WritableStream;
  /** Scrubs every line before it is written; default the process-wide `redactor`. */
  redactor?: SecretRedactor;
  /** Fields on every line; replaces pino's default `pid` and `hostname`. */
  base?: Record<string, unknown>;
  /** Logger name, written as `name` on every line. */
  name?: string;
}

/**
 * Creates a JSON-lines logger. A line logged while a span is active carries its `trace_id`,
 * `span_id` and `trace_flags`; every finished line, bound fields and error stacks included, is
 * passed through the redactor before it reaches the destination.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const redactor = options.redactor ?? defaultRedactor;
  const destination = options.destination ?? pino.destination({ dest: 1, sync: true });
  return pino(
    {
      level: options.level ?? 'info',
      ...(options.name === undefined ? {} : { name: options.name }),
      ...(options.base === undefined ? {} : { base: options.base }),
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: traceFields,
      // the hook sees the serialised line, so no field, message or stack can slip past it;
      // child loggers inherit hooks and cannot replace them
      hooks: { streamWrite: (line) => redactor.redact(line) },
    },
    destination,
  );
}

/** The ids of the active span, for correlating a log line with its trace. */
function traceFields(): Record<string, string> {
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return {};
  return {
    trace_id: spanContext.traceId,
    span_id: spanContext.spanId,
    trace_flags: `0${spanContext.traceFlags.toString(16)}`.slice(-2),
  };
}
