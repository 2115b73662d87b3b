import { type ComponentInstance, findComponentDefinition, ValidationError } from '@loom/domain';
import { type Options } from './component.js';

/**
 * The option values of a component instance, each falling back to the default of the catalog's
 * definition (or of the definition stored in the workflow). A value of the wrong type is a
 * ValidationError naming `<instance>.options.<name>`: validation at push should have caught it.
 */
export function optionsOf(instance: ComponentInstance): Options {
  const definitions = findComponentDefinition(instance.component.qualifiedName)?.options ?? instance.component.options;
  const value = (name: string): unknown => {
    const chosen = instance.options.find((option) => option.name === name);
    if (chosen !== undefined && chosen.value !== null && chosen.value !== undefined) return chosen.value;
    return definitions.find((definition) => definition.name === name)?.defaultValue ?? undefined;
  };
  const wrong = (name: string, expected: string): ValidationError =>
    ValidationError.of(`${instance.name}.options.${name}`, `must be ${expected}`, 'WRONG_TYPE');
  return {
    string(name) {
      const found = value(name);
      if (typeof found !== 'string') throw wrong(name, 'a string');
      return found;
    },
    optionalString(name) {
      const found = value(name);
      if (found === undefined) return undefined;
      if (typeof found !== 'string') throw wrong(name, 'a string');
      return found;
    },
    integer(name) {
      const found = value(name);
      if (typeof found !== 'number' || !Number.isInteger(found)) throw wrong(name, 'an integer');
      return found;
    },
    boolean(name) {
      const found = value(name);
      if (typeof found !== 'boolean') throw wrong(name, 'true or false');
      return found;
    },
    json(name) {
      return value(name);
    },
  };
}
