import { SchedulerService } from '@loom/contracts';
import { type ServiceInstance, type ServiceModule, unimplemented } from '@loom/service-kit';

/** The capability that provides each RPC; every one answers UNIMPLEMENTED naming it until it is built. */
const capabilities = {
  listSchedules: 'cron schedules and auto-start',
  pauseSchedule: 'cron schedules and auto-start',
  resumeSchedule: 'cron schedules and auto-start',
  triggerNow: 'cron schedules and auto-start',
};

/** loom.v1.Scheduler, deployable alone (`loom serve --services scheduler`) or with the others. */
export const schedulerModule: ServiceModule = {
  name: 'scheduler',
  fullName: 'loom.v1.Scheduler',
  create(): Promise<ServiceInstance> {
    return Promise.resolve({
      addToServer(server) {
        server.addService('loom.v1.Scheduler', SchedulerService, unimplemented(SchedulerService, capabilities));
      },
      close: () => Promise.resolve(),
    });
  },
};
