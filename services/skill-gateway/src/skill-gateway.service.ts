import { SkillGatewayService } from '@loom/contracts';
import { type ServiceInstance, type ServiceModule, unimplemented } from '@loom/service-kit';

/** The capability that provides each RPC; every one answers UNIMPLEMENTED naming it until it is built. */
const capabilities = {
  registerSkill: 'the skill registry',
  listSkills: 'the skill registry',
  deleteSkill: 'the skill registry',
  invokeSkill: 'skill calls with retries and circuit breaking',
  createPipeline: 'NLP pipeline creation on entity extraction skills',
  checkSkill: 'skill health probes',
};

/** loom.v1.SkillGateway, deployable alone (`loom serve --services skill-gateway`) or with the others. */
export const skillGatewayModule: ServiceModule = {
  name: 'skill-gateway',
  fullName: 'loom.v1.SkillGateway',
  create(): Promise<ServiceInstance> {
    return Promise.resolve({
      addToServer(server) {
        server.addService('loom.v1.SkillGateway', SkillGatewayService, unimplemented(SkillGatewayService, capabilities));
      },
      close: () => Promise.resolve(),
    });
  },
};
