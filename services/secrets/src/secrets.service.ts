import { SecretsService } from '@loom/contracts';
import { type ServiceInstance, type ServiceModule, unimplemented } from '@loom/service-kit';

/** The capability that provides each RPC; every one answers UNIMPLEMENTED naming it until it is built. */
const capabilities = {
  createVariable: 'ecosystem variables',
  updateVariable: 'ecosystem variables',
  getVariable: 'ecosystem variables',
  listVariables: 'ecosystem variables',
  deleteVariable: 'ecosystem variables',
  sealConfiguration: 'sealing secrets with AES-256-GCM',
  decryptResources: 'decryption at workflow start',
  rotateKey: 'key rotation',
};

/** RPCs only some identities may call. */
export const secretsAccessPolicy = { decryptResources: ['executor'] } as const;

/** loom.v1.Secrets, deployable alone (`loom serve --services secrets`) or with the others. */
export const secretsModule: ServiceModule = {
  name: 'secrets',
  fullName: 'loom.v1.Secrets',
  create(): Promise<ServiceInstance> {
    return Promise.resolve({
      addToServer(server) {
        server.addService('loom.v1.Secrets', SecretsService, unimplemented(SecretsService, capabilities), { restrict: secretsAccessPolicy });
      },
      close: () => Promise.resolve(),
    });
  },
};
