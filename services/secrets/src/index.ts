export * from './secrets.service.js';
export { KeyRing, KeyRingError, SealedValueError } from './key-ring.js';
export { secretsMigrations } from './migrations.js';
export { VariableStore, type VariableRow } from './variable-store.js';
