import { type ServiceDefinition } from '@grpc/grpc-js';
import { service as healthServiceDefinition } from 'grpc-health-check';
import { type ServerStreamHandler, type UnaryHandler } from './handlers.js';
import { NotFoundError } from '@loom/domain';
import { StreamChannel } from '@loom/foundation';

/** Serving status of one service name, as grpc.health.v1 reports it. */
export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

interface HealthCheckRequest {
  service?: string;
}
interface HealthCheckResponse {
  status: ServingStatus;
}

/** Status changes one Watch stream holds for a client that reads slower than they come; past it the stream ends RESOURCE_EXHAUSTED. */
export const HEALTH_WATCH_CAPACITY = 100;

/** The grpc.health.v1.Health service definition (from grpc-health-check). */
export const healthDefinition = healthServiceDefinition as unknown as ServiceDefinition;

/**
 * grpc.health.v1 (Check, Watch, List) over the protocol definition of grpc-health-check, with
 * one difference from its HealthImplementation: on shutdown every Watch stream receives
 * NOT_SERVING and then ends with OK, so a shutdown never has to cut a health watcher off. A watcher
 * more than HEALTH_WATCH_CAPACITY changes behind is ended as every loom watch is (StreamChannel).
 */
export class HealthService {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Map<string, Set<StreamChannel<ServingStatus>>>();

  /** Sets a service's status ('' is the whole server) and tells its watchers. */
  setStatus(service: string, status: ServingStatus): void {
    if (this.statuses.get(service) === status) return;
    this.statuses.set(service, status);
    for (const channel of this.watchers.get(service) ?? []) channel.push(status);
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
        // on shutdown NOT_SERVING is pushed before the signal aborts, and the channel hands it over before it ends
        const channel = new StreamChannel<ServingStatus>({ capacity: HEALTH_WATCH_CAPACITY, signal: context.signal });
        channel.push(this.statuses.get(service) ?? 'SERVICE_UNKNOWN');
        const channels = this.watchers.get(service) ?? new Set();
        this.watchers.set(service, channels);
        channels.add(channel);
        try {
          for await (const status of channel) await send({ status });
        } finally {
          channels.delete(channel);
          if (channels.size === 0) this.watchers.delete(service);
        }
      },
      List: () =>
        Promise.resolve({
          statuses: Object.fromEntries([...this.statuses].map(([name, status]) => [name, { status }])),
        }),
    };
  }
}
