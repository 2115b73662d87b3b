import { Writable } from 'node:stream';
import { createLogger, type Logger } from '@loom/telemetry';

/** A logger whose JSON lines are kept in memory, for assertions on what was logged. */
export function capturedLogger(): { logger: Logger; lines: () => string[] } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  });
  const logger = createLogger({ level: 'debug', destination });
  return { logger, lines: () => chunks.join('').split('\n').filter((line) => line !== '') };
}
