import { type ExecutorService } from '@loom/contracts';
import { ValidationError } from '@loom/domain';
import { type AsyncImplementation } from '@loom/service-kit';
import { type Executor } from './executor.service.js';

/** The loom.v1.Executor handler that replays a workflow's kept processed messages (issue 50). */
export function replayHandler(executor: Executor): Pick<AsyncImplementation<typeof ExecutorService>, 'replayMessages'> {
  return {
    async replayMessages(request) {
      const { workflow, sinceMs, fromSequence } = request;
      if (workflow === '') throw ValidationError.of('workflow', 'is required', 'MISSING_FIELD');
      if ((sinceMs === 0) === (fromSequence === 0)) {
        throw ValidationError.of(sinceMs === 0 ? 'since_ms' : 'from_sequence', 'give since_ms or from_sequence, exactly one, above 0', 'CONFLICTING_FIELDS');
      }
      const result = await executor.replay(workflow, sinceMs > 0 ? { sinceMs } : { fromSequence });
      return { ...result };
    },
  };
}
