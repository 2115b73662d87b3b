import { type Attributes, type Context } from '@opentelemetry/api';
import { type ReadableSpan, type Span, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { type SecretRedactor } from './secret-redactor.js';

/**
 * Scrubs registered secrets from a span's name, attributes, event names and attributes, link
 * attributes and status message before any exporting processor sees it. It works in `onEnding`
 * (called for every processor before any `onEnd`), and again in `onEnd` for an SDK without that
 * experimental hook, where it must then be the first processor.
 */
export class RedactingSpanProcessor implements SpanProcessor {
  private readonly redacted = new WeakSet<object>();

  constructor(private readonly redactor: SecretRedactor) {}

  /** Nothing to do when a span starts. */
  onStart(_span: Span, _parentContext: Context): void {}

  /** Redacts the span while it can still be written. */
  onEnding(span: Span): void {
    this.redactSpan(span, (name) => span.updateName(name));
  }

  /** Redacts the span if `onEnding` has not already. */
  onEnd(span: ReadableSpan): void {
    this.redactSpan(span, undefined);
  }

  /** Nothing is buffered. */
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  /** Nothing to release. */
  shutdown(): Promise<void> {
    return Promise.resolve();
  }

  private redactSpan(span: ReadableSpan, rename: ((name: string) => void) | undefined): void {
    // redacting twice could rewrite `[REDACTED]` itself when a secret is a part of it
    if (this.redactor.size === 0 || this.redacted.has(span)) return;
    this.redacted.add(span);
    if (rename !== undefined) {
      const name = this.redactor.redact(span.name);
      if (name !== span.name) rename(name);
    }
    // the SDK hands the span's own objects to processors; the properties are typed readonly but
    // the records are plain and are rewritten in place
    this.redactAttributes(span.attributes);
    for (const event of span.events) {
      event.name = this.redactor.redact(event.name);
      if (event.attributes !== undefined) this.redactAttributes(event.attributes);
    }
    for (const link of span.links) {
      if (link.attributes !== undefined) this.redactAttributes(link.attributes);
    }
    if (span.status.message !== undefined) span.status.message = this.redactor.redact(span.status.message);
  }

  private redactAttributes(attributes: Attributes): void {
    for (const [key, value] of Object.entries(attributes)) {
      if (typeof value === 'string' || Array.isArray(value)) {
        attributes[key] = this.redactor.redactValue(value) as typeof value;
      }
    }
  }
}
