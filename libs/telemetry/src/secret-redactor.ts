/** The text that replaces every registered secret. */
export const REDACTED = '[REDACTED]';

/**
 * Replaces registered secrets in text and values. Every non-empty string is accepted, however
 * short: a short secret (say `abc`) also redacts every unrelated occurrence of those characters,
 * which over-redacts logs but never leaks. Each secret is matched both as itself and in its
 * JSON-escaped form, so it is caught inside serialised JSON lines too.
 */
export class SecretRedactor {
  private readonly secrets = new Set<string>();
  private pattern: RegExp | undefined;

  /** Registers a secret; empty strings are ignored. */
  add(secret: string): void {
    if (secret === '' || this.secrets.has(secret)) return;
    this.secrets.add(secret);
    this.pattern = undefined;
  }

  /** How many secrets are registered. */
  get size(): number {
    return this.secrets.size;
  }

  /** Returns the text with every registered secret (raw or JSON-escaped) replaced by `[REDACTED]`. */
  redact(text: string): string {
    if (this.secrets.size === 0 || text === '') return text;
    return text.replace(this.compiledPattern(), REDACTED);
  }

  /** Returns a copy of the value with secrets redacted in every string, array element, key and nested property. */
  redactValue(value: unknown): unknown {
    if (this.secrets.size === 0) return value;
    return this.redactDeep(value, new WeakMap());
  }

  private redactDeep(value: unknown, seen: WeakMap<object, unknown>): unknown {
    if (typeof value === 'string') return this.redact(value);
    if (typeof value !== 'object' || value === null) return value;
    const copied = seen.get(value);
    if (copied !== undefined) return copied;
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      seen.set(value, out);
      for (const item of value) out.push(this.redactDeep(item, seen));
      return out;
    }
    if (!isPlainObject(value)) return value;
    const out: Record<string, unknown> = {};
    seen.set(value, out);
    for (const [key, item] of Object.entries(value)) out[this.redact(key)] = this.redactDeep(item, seen);
    return out;
  }

  private compiledPattern(): RegExp {
    if (this.pattern === undefined) {
      const forms = new Set<string>();
      for (const secret of this.secrets) {
        forms.add(secret);
        forms.add(JSON.stringify(secret).slice(1, -1));
      }
      // one alternation, longest first, in a single pass: a secret that contains another is
      // replaced whole, and a replacement is never scanned again
      const alternatives = [...forms].sort((a, b) => b.length - a.length).map(escapeRegExp);
      this.pattern = new RegExp(alternatives.join('|'), 'g');
    }
    return this.pattern;
  }
}

/** The process-wide redactor: secrets registered here are scrubbed from every default logger and span. */
export const redactor = new SecretRedactor();

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
