import { derivedInstanceName } from '@loom/domain';

/**
 * Component instance names `<plain name>_<uuid>` for plain names given by role, each uuid derived from `scope` and the
 * plain name (as the compact form derives them), so a test names its components the same way on every run.
 */
export function componentNames<const Names extends Readonly<Record<string, string>>>(
  scope: string,
  plainNames: Names,
): { readonly [Role in keyof Names]: string } {
  const named = Object.entries(plainNames).map(([role, plain]) => [role, derivedInstanceName(scope, 'component', plain)]);
  return Object.fromEntries(named) as { readonly [Role in keyof Names]: string };
}
