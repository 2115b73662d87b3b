import { FailedPreconditionError } from '@loom/domain';
import { type ComponentFactory, type Emit, type Inlet, type LoomMessage, type SignalSource } from '../runtime/component.js';

/** The inlet source: its messages come from PublishMessage, addressed by the instance's name. */
export const inletFactory: ComponentFactory = {
  kind: 'inlet',
  create(context) {
    let emit: Emit | undefined;
    const inlet: Inlet = {
      start(given) {
        emit = given;
        return Promise.resolve();
      },
      stop() {
        emit = undefined;
        return Promise.resolve();
      },
      publish(message: LoomMessage, withdrawal: SignalSource) {
        if (emit === undefined) return Promise.reject(new FailedPreconditionError(`inlet '${context.name}' is not running`));
        return emit(message, withdrawal);
      },
    };
    return Promise.resolve(inlet);
  },
};
