import { createHash } from 'node:crypto';
import { parseStoredName, workflowBaseName } from './stored-name.js';

/**
 * Namespace of the UUIDs the compact workflow form derives (RFC 9562 version 5). Changing it would
 * rename every component of every compact file, so it is fixed for good.
 */
export const DERIVED_NAME_NAMESPACE = 'ac803fd3-d68c-4256-b755-fd25799516cc';

/** What a plain name of a compact workflow names: a component instance or a resource instance. */
export type DerivedNameKind = 'component' | 'resource';

/** A version 5 UUID (SHA-1, RFC 9562 section 5.5) of `name` in `namespace`, lower case. */
export function uuidV5(namespace: string, name: string): string {
  const hash = createHash('sha1')
    .update(Buffer.from(namespace.replaceAll('-', ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The uuid of a plain name in a workflow: uuidV5(DERIVED_NAME_NAMESPACE, `<workflow name>\n<kind>\n<plain name>`), the
 * workflow name without its own `_<uuid>`. The same file always gives the same names, whatever uuid the store gives
 * the workflow.
 */
export function derivedUuid(workflowName: string, kind: DerivedNameKind, plainName: string): string {
  return uuidV5(DERIVED_NAME_NAMESPACE, `${workflowBaseName(workflowName)}\n${kind}\n${plainName}`);
}

/** The instance name `<plain name>_<derived uuid>` of a plain name; a name that already ends in `_<uuid>` is kept. */
export function derivedInstanceName(workflowName: string, kind: DerivedNameKind, name: string): string {
  if (parseStoredName(name) !== undefined) return name;
  return `${name}_${derivedUuid(workflowName, kind, name)}`;
}

/** The plain name of an instance name whose uuid is the derived one; any other name is kept as it is. */
export function plainInstanceName(workflowName: string, kind: DerivedNameKind, name: string): string {
  const parsed = parseStoredName(name);
  if (parsed === undefined || parsed.uuid !== derivedUuid(workflowName, kind, parsed.base)) return name;
  return parsed.base;
}

/**
 * The instance name `given` means among `names`: itself when it is one of them, else the only one whose plain name
 * (without `_<uuid>`) it is, as a compact file writes it; undefined when none or several are.
 */
export function instanceNamed(given: string, names: Iterable<string>): string | undefined {
  const all = [...names];
  if (all.includes(given)) return given;
  const plain = all.filter((name) => parseStoredName(name)?.base === given);
  return plain.length === 1 ? plain[0] : undefined;
}
