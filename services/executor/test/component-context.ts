import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { type Clock } from '@loom/foundation';
import { createLogger, SecretRedactor } from '@loom/telemetry';
import { type ComponentContext } from '../src/runtime/component.js';
import { optionsOf } from '../src/runtime/options.js';
import { COMPONENT_KINDS } from '@loom/domain';
import { instance as instanceOf } from './workflows.js';

/** A JSON log line of a component. */
export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** A component context built by hand, and what its component logged and reported. */
export interface BuiltContext {
  readonly context: ComponentContext;
  /** The logger's output as written, chunk by chunk. */
  readonly raw: string[];
  /** The logger's output, one parsed JSON line each. */
  readonly lines: LogLine[];
  /** Aborts the context's signal (a run stopping). */
  readonly controller: AbortController;
  /** What the component reported through `fail` (with `onFail: 'record'`). */
  readonly failures: unknown[];
}

/**
 * A context for a component of `kind` with these options, outside any run: its logger writes
 * debug JSON lines through a redactor that knows no secret (whatever stays out of the logs, the
 * component kept out). `onFail: 'throw'` suits processors, which throw ComponentFailedError
 * rather than calling fail; `'record'` suits sources, which report through it.
 */
export function componentContext(
  kind: string,
  options: Record<string, unknown>,
  {
    name = 'component_1',
    workflowName,
    onFail,
    privateDirectory = tmpdir(),
    clock,
  }: { name?: string; workflowName: string; onFail: 'throw' | 'record'; privateDirectory?: string; clock?: Clock },
): BuiltContext {
  const instance = instanceOf(kind, name, options);
  const raw: string[] = [];
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      const text = chunk.toString('utf8');
      raw.push(text);
      for (const line of text.split('\n')) if (line !== '') lines.push(JSON.parse(line) as LogLine);
      callback();
    },
  });
  const controller = new AbortController();
  const failures: unknown[] = [];
  const context: ComponentContext = {
    name,
    instance,
    options: optionsOf(instance),
    resource: undefined,
    workflowName,
    logger: createLogger({ level: 'debug', destination, redactor: new SecretRedactor() }),
    signal: controller.signal,
    ...(clock === undefined ? {} : { clock }),
    dryRun: false,
    privateDirectory: () => privateDirectory,
    fail:
      onFail === 'throw'
        ? (error) => {
            throw error;
          }
        : (error) => void failures.push(error),
  };
  return { context, raw, lines, controller, failures };
}

/**
 * The context of a script component (message transformer or filter) in `language`, of workflow 'scripts', through
 * `componentContext`: the JavaScript and Python tests build theirs here.
 */
export function scriptContext(
  script: string,
  role: 'transformer' | 'filter',
  language: 'javascript' | 'python',
  { name = `${language}_${role}`, privateDirectory }: { name?: string; privateDirectory?: string } = {},
): BuiltContext {
  const kind = role === 'filter' ? COMPONENT_KINDS.MESSAGE_FILTER : COMPONENT_KINDS.MESSAGE_TRANSFORMER;
  return componentContext(
    kind,
    { script, language },
    { name, workflowName: 'scripts', onFail: 'throw', ...(privateDirectory === undefined ? {} : { privateDirectory }) },
  );
}
