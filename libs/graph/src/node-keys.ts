import { ValidationError } from '@loom/domain';
import type { GraphNodeKey, GraphPropertyIndex } from './graph-store.js';
import { checkIdentifier } from './parameters.js';

/** The indexes ensurePropertyIndexes was given, each as a node key, checked: identifiers, at least one property, none twice. */
export function nodeKeysOf(indexes: readonly (GraphPropertyIndex | GraphNodeKey)[]): GraphNodeKey[] {
  return indexes.map((index, i) => {
    checkIdentifier(index.label, `indexes[${i}].label`);
    if ('property' in index) {
      checkIdentifier(index.property, `indexes[${i}].property`);
      return { label: index.label, properties: [index.property] };
    }
    if (index.properties.length === 0) throw ValidationError.of(`indexes[${i}].properties`, 'must name at least one property', 'MISSING_FIELD');
    index.properties.forEach((property, p) => checkIdentifier(property, `indexes[${i}].properties[${p}]`));
    if (new Set(index.properties).size !== index.properties.length) {
      throw ValidationError.of(`indexes[${i}].properties`, 'must not name a property twice', 'INVALID_VALUE');
    }
    return { label: index.label, properties: [...index.properties] };
  });
}
