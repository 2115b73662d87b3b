import {
  type DerivedKeySpec,
  type FixedKey,
  type fixedKeys,
  type KeyFamily,
  type keyFamilies,
  type KeySpec,
  type MapKeySpec,
  type ServiceName,
} from './config-keys.js';

/**
 * The shape of the configuration, derived from the key table: a key's place in the configuration
 * is its name without the `loom.` prefix (`loom.telemetry.sampling.ratio` is
 * `config.telemetry.sampling.ratio`), a key family is a map at its name, and its value is what the
 * key's schema reads. Nothing here names a key: adding one to the table adds it to the type.
 */

/** Where a key sits in the configuration: its name without `loom.`. */
export type ConfigPath<K extends string> = K extends `loom.${infer Rest}` ? Rest : K;

/** The place of a key in the configuration, as the names of its path. */
export function configPath(key: string): string[] {
  return (key.startsWith('loom.') ? key.slice('loom.'.length) : key).split('.');
}

/** What the configuration holds for a key: its value, or its derived default when it has one. */
type KeyValue<S> = S extends DerivedKeySpec<infer T> ? T : S extends KeySpec<infer T> ? T : never;

/** What the configuration holds for a key family: entry name to value. */
type FamilyValue<S> = S extends MapKeySpec<infer T> ? Readonly<Record<string, T>> : never;

/** Where one service is reached; no address means this process. */
export interface ServiceEndpoint {
  readonly address?: string;
}

/** Every key's value by its name, the per-service addresses as one map. */
type Values = { readonly [K in FixedKey]: KeyValue<(typeof fixedKeys)[K]> } & { readonly [K in KeyFamily]: FamilyValue<(typeof keyFamilies)[K]> } & {
  readonly 'loom.services': Readonly<Record<ServiceName, ServiceEndpoint>>;
};

/** `a.b.c` with value V as `{ a: { b: { c: V } } }`; a value that may be undefined is an optional property. */
type Branch<P extends string, V> = P extends `${infer Head}.${infer Tail}`
  ? { readonly [_ in Head]: Branch<Tail, V> }
  : undefined extends V
    ? { readonly [_ in P]?: Exclude<V, undefined> }
    : { readonly [_ in P]: V };

/** The intersection of the members of a union. */
type Intersection<U> = (U extends unknown ? (member: U) => void : never) extends (all: infer I) => void ? I : never;

/** An intersection of object types written as one object type, at every depth (readable in editors and errors). */
export type Expand<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]: Expand<T[K]> } : T;

/** The configuration's values, each at its key's place. */
export type KeyTree = Intersection<{ [K in keyof Values]: Branch<ConfigPath<K & string>, Values[K]> }[keyof Values]>;

/** Puts `value` at `path` in `tree`, making the objects on the way; an undefined value leaves the property absent. */
export function placeAt(tree: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = tree;
  for (const name of path.slice(0, -1)) {
    const next = node[name];
    if (next === undefined) node = node[name] = {};
    else node = next as Record<string, unknown>;
  }
  if (value !== undefined) node[path.at(-1)!] = value;
}
