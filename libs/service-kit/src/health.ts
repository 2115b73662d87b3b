import { type ServiceDefinition } from '@grpc/grpc-js';
import { service as healthServiceDefinition } from 'grpc-health-check';
import { type ServerStreamHandler, type UnaryHandler } from './handlers.js';
import { NotFoundError } from '@loom/domain';

/** Serving status of one service name, as grpc.health.v1 reports it. */
export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

interface HealthCheckRequest {
  service?: string;
}
interface HealthCheckResponse {
  status: ServingStatus;
}

/** The grpc.health.v1.Health service definition (from grpc-health-check). */
export const healthDefinition = healthServiceDefinition as unknown as ServiceDefinition;

/**
 * grpc.health.v1 (Check, Watch, List) over the protocol definition of grpc-health-check, with
 * one difference from its HealthImplementation: on shutdown every Watch stream receives
 * NOT_SERVING and then ends with OK, so a shutdown never has to cut a health watcher off.
 */
export class HealthService {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Map<string, Set<(status: ServingStatus) => void>>();

  /** Sets a service's status ('' is the whole server) and tells its watchers. */
  setStatus(service: string, status: ServingStatus): void {
    if (this.statuses.get(service) === status) return;
    this.statuses.set(service, status);
    for (const notify of this.watchers.get(service) ?? []) notify(status);
  }

  /** The async handlers for Check, Watch and List. */
  handlers(): {
    Check: UnaryHandler<HealthCheckRequest, HealthCheckResponse>;
    Watch: ServerStreamHandler<HealthCheckRequest, HealthCheckResponse>;
    List: UnaryHandler<object, { statuses: Record<string, HealthCheckResponse> }>;
  } {
    return {
      Check: (request) => {
        const status = this.statuses.get(request.service ?? '');
        if (status === undefined) return Promise.reject(new NotFoundError('health of service', request.service ?? ''));
        return Promise.resolve({ status });
      },
      Watch: async (request, send, context) => {
        const service = request.service ?? '';
        const updates: ServingStatus[] = [this.statuses.get(service) ?? 'SERVICE_UNKNOWN'];
        let wake: (() => void) | undefined;
        const notify = (status: ServingStatus): void => {
          updates.push(status);
          wake?.();
        };
        const set = this.watchers.get(service) ?? new Set();
        this.watchers.set(service, set);
        set.add(notify);
        context.signal.addEventListener('abort', () => wake?.(), { once: true });
        try {
          for (;;) {
            for (let next = updates.shift(); next !== undefined; next = updates.shift()) await send({ status: next });
            if (context.signal.aborted) return;
            await new Promise<void>((resolve) => (wake = resolve));
            wake = undefined;
          }
        } finally {
          set.delete(notify);
        }
      },
      List: () =>
        Promise.resolve({
          statuses: Object.fromEntries([...this.statuses].map(([name, status]) => [name, { status }])),
        }),
    };
  }
}
