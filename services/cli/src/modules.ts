import { auditModule } from '@loom/audit';
import { configStoreModule } from '@loom/config-store';
import { type ServiceName, serviceNames } from '@loom/config';
import { executorModule } from '@loom/executor';
import { schedulerModule } from '@loom/scheduler';
import { secretsModule } from '@loom/secrets';
import { type ServiceModule } from '@loom/service-kit';
import { skillGatewayModule } from '@loom/skill-gateway';
import { UsageError } from './usage-error.js';

// kept here too for command files that import it from this module
export { UsageError } from './usage-error.js';

/** Every service module, by name, in start order. */
export const serviceModules: Readonly<Record<ServiceName, ServiceModule>> = {
  audit: auditModule,
  secrets: secretsModule,
  'skill-gateway': skillGatewayModule,
  'config-store': configStoreModule,
  executor: executorModule,
  scheduler: schedulerModule,
};

/** The modules named in a `--services a,b` list; every service when the list is absent. */
export function selectModules(list: string | undefined): ServiceModule[] {
  if (list === undefined || list.trim() === '' || list.trim() === 'all') return Object.values(serviceModules);
  const names = list
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !(serviceNames as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new UsageError(`--services: unknown service ${unknown.map((n) => `'${n}'`).join(', ')}; choose from ${serviceNames.join(', ')}`);
  return Object.values(serviceModules).filter((module) => names.includes(module.name));
}
