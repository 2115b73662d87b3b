import { WorkflowStoreService } from '@loom/contracts';
import { type ServiceInstance, type ServiceModule, unimplemented } from '@loom/service-kit';

/** The capability that provides each RPC; every one answers UNIMPLEMENTED naming it until it is built. */
const capabilities = {
  putWorkflow: 'durable workflow storage on disk',
  getWorkflow: 'durable workflow storage on disk',
  listWorkflows: 'durable workflow storage on disk',
  deleteWorkflow: 'durable workflow storage on disk',
  watchWorkflows: 'workflow change stream for the scheduler',
  putSchedule: 'workflow schedules',
  getSchedule: 'workflow schedules',
};

/** loom.v1.WorkflowStore, deployable alone (`loom serve --services config-store`) or with the others. */
export const configStoreModule: ServiceModule = {
  name: 'config-store',
  fullName: 'loom.v1.WorkflowStore',
  create(): Promise<ServiceInstance> {
    return Promise.resolve({
      addToServer(server) {
        server.addService('loom.v1.WorkflowStore', WorkflowStoreService, unimplemented(WorkflowStoreService, capabilities));
      },
      close: () => Promise.resolve(),
    });
  },
};
