const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Formats a path of keys and indexes as a JSON path (`components[2].options[0].value`), below `base` when given. */
export function formatJsonPath(path: readonly PropertyKey[], base = ''): string {
  let text = base;
  for (const key of path) text = appendJsonPath(text, key);
  return text;
}

/** Appends one key or index to a JSON path (`resources[0]` + `parameters` → `resources[0].parameters`). */
export function appendJsonPath(path: string, key: PropertyKey): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  const name = typeof key === 'symbol' ? (key.description ?? '') : key;
  // keys that are not identifiers (spaces, dots, dashes) are quoted so the path stays unambiguous
  if (!IDENTIFIER.test(name)) return `${path}[${JSON.stringify(name)}]`;
  return path === '' ? name : `${path}.${name}`;
}
