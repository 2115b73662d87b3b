import { type ComponentInstance, findComponentDefinition, ValidationError } from '@loom/domain';
import { type Logger } from '@loom/telemetry';
import { type ComponentFactory, type LoomMessage, type Options } from './component.js';
import { type ComponentError } from './component-error.js';
import { type IntakeFactory } from './intake.js';
import { type MessageTrail } from './message-trail.js';

/** Messages each component's input queue holds before upstream waits, unless the run says otherwise. */
export const DEFAULT_QUEUE_CAPACITY = 1024;
/** Most messages handed to one `process` call, unless the run or the component's batching says otherwise. */
export const DEFAULT_MAX_BATCH = 256;
/** Share of a source's messages traced per component, unless the run says otherwise (see tracing.ts). */
export const DEFAULT_MESSAGE_SAMPLING_RATIO = 0;
/** Most workers of one processor (`concurrency`). */
export const MAX_CONCURRENCY = 64;

/** How a run is built and sized; each optional value has its default here (runSettings). */
export interface RunOptions {
  /** Component kinds by qualified name. */
  readonly factories: ReadonlyMap<string, ComponentFactory>;
  readonly logger: Logger;
  /** Messages each component's input queue holds before upstream waits; default DEFAULT_QUEUE_CAPACITY. */
  readonly queueCapacity?: number;
  /** Most messages handed to one `process` call; default DEFAULT_MAX_BATCH. */
  readonly maxBatch?: number;
  /** DryRun: components without side effects only; see dry-run.ts. Default false. */
  readonly dryRun?: boolean;
  /** Sees every message a processor emits, by component (DryRun records them). */
  readonly onOutput?: (component: string, message: LoomMessage) => void;
  /** Sees every failure that reached the end of its retries, with the message it failed. */
  readonly onFailure?: (failure: ComponentError, message: LoomMessage) => void;
  /** Share of the messages a source makes that get a span per component, 0 to 1 (see tracing.ts); default 0. */
  readonly messageSamplingRatio?: number;
  /**
   * How the run takes its sources' messages (intake.ts): jetStreamIntake stores each in the workflow's JetStream stream
   * before it is answered and brings it in from the source's consumer, acknowledged once all it led to is finished.
   * Default memoryIntake: messages are held in the run's memory.
   */
  readonly intake?: IntakeFactory;
  /** The version of the stored workflow this run runs (the config store's); 0 when not known (a dry run). */
  readonly workflowVersion?: number;
  /** Where the run records what happens to each message for `loom message trace` (issue 50); absent: nothing recorded. */
  readonly trail?: MessageTrail;
  /**
   * Keeps messages that failed for good (no failure handler, or they failed in their failure handler) in the failure
   * store (issue 50), a component's batch of them in one call, answering each one's outcome in order; their deliveries
   * are settled only once this resolved. Never rejects. Default: nothing is kept.
   */
  readonly keepFailed?: (failed: readonly FailedDelivery[]) => Promise<readonly KeepOutcome[]>;
}

/** A message that failed for good at a component, to be kept in the failure store. */
export interface FailedDelivery {
  /** The component's instance name. */
  readonly component: string;
  readonly message: LoomMessage;
  readonly failure: ComponentError;
  /** How often it was tried this time: 1 and its retries. */
  readonly tries: number;
  /** The component's store_error_content: whether the message itself may be kept. */
  readonly keepContent: boolean;
}

/** What became of a failed message sent to the failure store: kept, refused (the store is full), or not kept (the store could not be reached). */
export type KeepOutcome = 'kept' | 'refused' | 'unavailable';

/** The sizes of a run, its defaults filled in. */
export interface RunSettings {
  readonly queueCapacity: number;
  readonly maxBatch: number;
  readonly dryRun: boolean;
  readonly messageSamplingRatio: number;
}

/** The run options' sizes with their defaults. */
export function runSettings(options: RunOptions): RunSettings {
  return {
    queueCapacity: options.queueCapacity ?? DEFAULT_QUEUE_CAPACITY,
    maxBatch: options.maxBatch ?? DEFAULT_MAX_BATCH,
    dryRun: options.dryRun ?? false,
    messageSamplingRatio: options.messageSamplingRatio ?? DEFAULT_MESSAGE_SAMPLING_RATIO,
  };
}

/** How one component handles messages and their failures; a kind without such an option gets the default. */
export interface ComponentSettings {
  /** Workers taking batches side by side (`concurrency`, default 1). */
  readonly concurrency: number;
  /** Retries of a transient failure (`max_retry`, default 0). */
  readonly maxRetry: number;
  /** Milliseconds between retries (`delay`, default 0). */
  readonly delayMs: number;
  /** Whether the failure handler's message carries the error (`store_error_content`, default true). */
  readonly storeError: boolean;
  /** Whether the failure handler's message carries the failed message (`store_message_content`, default true). */
  readonly storeMessage: boolean;
  /** The instance name of the failure handler (`failure_handler`), when one is chosen. */
  readonly failureHandler: string | undefined;
}

/** The settings of `components[index]`; a concurrency out of range is a ValidationError naming the field. */
export function componentSettings(instance: ComponentInstance, index: number, options: Options): ComponentSettings {
  const has = (name: string): boolean =>
    instance.component.options.some((option) => option.name === name) || instance.options.some((option) => option.name === name);
  const concurrency = has('concurrency') ? options.integer('concurrency') : 1;
  if (concurrency < 1 || concurrency > MAX_CONCURRENCY) {
    throw ValidationError.of(`components[${index}].options.concurrency`, `must be between 1 and ${MAX_CONCURRENCY}`, 'INVALID_VALUE');
  }
  const handler = instance.options.find((option) => option.name === 'failure_handler')?.value;
  return {
    concurrency,
    maxRetry: has('max_retry') ? options.integer('max_retry') : 0,
    delayMs: has('delay') ? options.integer('delay') : 0,
    storeError: has('store_error_content') ? options.boolean('store_error_content') : true,
    storeMessage: has('store_message_content') ? options.boolean('store_message_content') : true,
    failureHandler: typeof handler === 'string' && handler !== '' ? handler : undefined,
  };
}

/**
 * The option values of a component instance, each falling back to the default of the catalog's
 * definition (or of the definition stored in the workflow). A value of the wrong type is a
 * ValidationError naming `<instance>.options.<name>`: validation at push should have caught it.
 */
export function optionsOf(instance: ComponentInstance): Options {
  const definitions = findComponentDefinition(instance.component.qualifiedName)?.options ?? instance.component.options;
  const value = (name: string): unknown => {
    const chosen = instance.options.find((option) => option.name === name);
    if (chosen !== undefined && chosen.value !== null && chosen.value !== undefined) return chosen.value;
    return definitions.find((definition) => definition.name === name)?.defaultValue ?? undefined;
  };
  const wrong = (name: string, expected: string): ValidationError =>
    ValidationError.of(`${instance.name}.options.${name}`, `must be ${expected}`, 'WRONG_TYPE');
  return {
    string(name) {
      const found = value(name);
      if (typeof found !== 'string') throw wrong(name, 'a string');
      return found;
    },
    optionalString(name) {
      const found = value(name);
      if (found === undefined) return undefined;
      if (typeof found !== 'string') throw wrong(name, 'a string');
      return found;
    },
    integer(name) {
      const found = value(name);
      if (typeof found !== 'number' || !Number.isInteger(found)) throw wrong(name, 'an integer');
      return found;
    },
    boolean(name) {
      const found = value(name);
      if (typeof found !== 'boolean') throw wrong(name, 'true or false');
      return found;
    },
    json(name) {
      return value(name);
    },
  };
}
