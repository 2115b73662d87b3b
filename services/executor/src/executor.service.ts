import { ExecutorService } from '@loom/contracts';
import { type ServiceInstance, type ServiceModule, unimplemented } from '@loom/service-kit';

/** The capability that provides each RPC; every one answers UNIMPLEMENTED naming it until it is built. */
const capabilities = {
  startWorkflow: 'the workflow runtime',
  stopWorkflow: 'the workflow runtime',
  getWorkflowStatus: 'the workflow runtime',
  publishMessage: 'the workflow runtime (inlet sources)',
  dryRun: 'dry runs of workflow configurations',
  watchRun: 'the workflow runtime (run events)',
  listComponentDefinitions: 'the component catalog',
};

/** loom.v1.Executor, deployable alone (`loom serve --services executor`) or with the others. */
export const executorModule: ServiceModule = {
  name: 'executor',
  fullName: 'loom.v1.Executor',
  create(): Promise<ServiceInstance> {
    return Promise.resolve({
      addToServer(server) {
        server.addService('loom.v1.Executor', ExecutorService, unimplemented(ExecutorService, capabilities));
      },
      close: () => Promise.resolve(),
    });
  },
};
