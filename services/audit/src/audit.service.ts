import { AuditService } from '@loom/contracts';
import { type ServiceInstance, type ServiceModule, unimplemented } from '@loom/service-kit';

/** The capability that provides each RPC; every one answers UNIMPLEMENTED naming it until it is built. */
const capabilities = {
  append: 'the durable audit log',
  query: 'audit log queries',
  watch: 'the audit event stream',
  verify: 'audit hash-chain verification',
};

/** loom.v1.Audit, deployable alone (`loom serve --services audit`) or with the others. */
export const auditModule: ServiceModule = {
  name: 'audit',
  fullName: 'loom.v1.Audit',
  create(): Promise<ServiceInstance> {
    return Promise.resolve({
      addToServer(server) {
        server.addService('loom.v1.Audit', AuditService, unimplemented(AuditService, capabilities));
      },
      close: () => Promise.resolve(),
    });
  },
};
