import { ValidationError } from '@loom/domain';
import { type ComponentContext, type ComponentFactory, outcome, type Processor } from '../runtime/component.js';

/** Levels the logger sink may log at. */
export const LOGGER_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
type Level = (typeof LOGGER_LEVELS)[number];

/** A sink that logs each message (`component`, `messageId`, `body`) at `level` and emits nothing. */
export const loggerFactory: ComponentFactory = {
  kind: 'processor',
  // a bad option rejects the promise rather than throwing from create
  create: (context) => new Promise<Processor>((resolve) => resolve(loggerSink(context))),
};

function loggerSink(context: ComponentContext): Processor {
  const level = context.options.string('level').toLowerCase();
  if (!isLevel(level)) throw ValidationError.of(`${context.name}.options.level`, `must be one of ${LOGGER_LEVELS.join(', ')}`, 'INVALID_VALUE');
  return {
    process(batch) {
      return Promise.resolve(
        batch.map((message) => {
          context.logger[level]({ component: context.name, messageId: message.id, body: message.body }, 'message');
          return outcome.none();
        }),
      );
    },
    close() {
      return Promise.resolve();
    },
  };
}

function isLevel(level: string): level is Level {
  return (LOGGER_LEVELS as readonly string[]).includes(level);
}
