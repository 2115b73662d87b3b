/** A `{field}` or `{a.b}` placeholder of a template over a message's body. */
export const PLACEHOLDER = /\{([^{}]+)\}/g;

/** A filled template, or why it could not be filled. */
export type FilledTemplate = { readonly ok: true; readonly value: string } | { readonly ok: false; readonly error: string };

/**
 * A template (the enricher's URL, the NATS publisher's subject) with each placeholder replaced by `encode` of its body
 * field's value; the field must be a string, number or boolean, and `encode` may refuse it (undefined). `what` names
 * the template in the error (`the URL template`).
 */
export function fillTemplate(
  template: string,
  body: Record<string, unknown>,
  what: string,
  encode: (value: string) => string | undefined = (value) => value,
): FilledTemplate {
  let error: string | undefined;
  const value = template.replace(PLACEHOLDER, (_placeholder, path: string) => {
    const found = valueAt(body, path.trim());
    if (typeof found === 'string' || typeof found === 'number' || typeof found === 'boolean') {
      const encoded = encode(String(found));
      if (encoded !== undefined) return encoded;
      error ??= `${what} cannot take the value of field '${path}'`;
    } else if (found === undefined || found === null) error ??= `${what} needs field '${path}', which the message does not have`;
    else error ??= `${what} needs field '${path}' to be a string, number or boolean, not ${Array.isArray(found) ? 'an array' : 'an object'}`;
    return '';
  });
  return error === undefined ? { ok: true, value } : { ok: false, error };
}

function valueAt(body: Record<string, unknown>, path: string): unknown {
  let current: unknown = body;
  for (const key of path.split('.')) {
    if (typeof current !== 'object' || current === null || Array.isArray(current) || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}
