import { captureStream } from '@loom/testing';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { SecretRedactor } from './secret-redactor.js';
import { startTelemetry, type Telemetry } from './telemetry.js';

const capture = captureStream;

let telemetry: Telemetry | undefined;
afterEach(async () => {
  await telemetry?.shutdown();
  telemetry = undefined;
});

describe('createLogger', () => {
  it('writes JSON lines at info and above by default, with level label, time, name and base fields', () => {
    const out = capture();
    const logger = createLogger({ destination: out.stream, redactor: new SecretRedactor(), name: 'loom', base: { service: 'secrets' } });
    logger.debug('hidden');
    logger.info({ count: 2 }, 'shown');
    const lines = out.lines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'shown', count: 2, name: 'loom', service: 'secrets' });
    expect(typeof lines[0]?.['time']).toBe('string');
    expect(lines[0]).not.toHaveProperty('trace_id');
  });

  it('adds the ids of the active span, and only while one is active', () => {
    // a processor, so spans are recorded and sampled (with nowhere to go they are not, and trace_flags is 00)
    telemetry = startTelemetry({ serviceName: 'logger-test', spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] });
    const out = capture();
    const logger = createLogger({ destination: out.stream, redactor: new SecretRedactor() });
    telemetry.tracer.startActiveSpan('work', (active) => {
      logger.info('inside');
      active.end();
    });
    logger.info('outside');
    const [inside, outside] = out.lines();
    expect(inside).toMatchObject({ msg: 'inside', trace_flags: '01' });
    expect(inside?.['trace_id']).toMatch(/^[0-9a-f]{32}$/);
    expect(inside?.['span_id']).toMatch(/^[0-9a-f]{16}$/);
    expect(outside).not.toHaveProperty('trace_id');
    expect(outside).not.toHaveProperty('span_id');
  });

  it('redacts secrets in messages, fields, bound fields and error stacks, in raw and escaped form', () => {
    const redactor = new SecretRedactor();
    const out = capture();
    const logger = createLogger({ destination: out.stream, redactor });
    const quoted = 'x"y\\z-secret';
    redactor.add('plain-secret-1');
    redactor.add(quoted);
    const child = logger.child({ bound: 'plain-secret-1' });
    child.info({ field: quoted, list: ['plain-secret-1'] }, `message with ${quoted}`);
    child.error(new Error(`failed with plain-secret-1 and ${quoted}`));
    const text = out.text();
    expect(text).not.toContain('plain-secret-1');
    expect(text).not.toContain(JSON.stringify(quoted).slice(1, -1));
    const [info, error] = out.lines();
    expect(info).toMatchObject({ bound: '[REDACTED]', field: '[REDACTED]', list: ['[REDACTED]'], msg: 'message with [REDACTED]' });
    expect(error?.['err']).toMatchObject({ message: 'failed with [REDACTED] and [REDACTED]' });
    expect((error?.['err'] as { stack: string }).stack).toMatch(/^Error: failed with \[REDACTED\] and \[REDACTED\]\n/);
  });

  it('redacts with a secret registered after the logger was made', () => {
    const redactor = new SecretRedactor();
    const out = capture();
    const logger = createLogger({ destination: out.stream, redactor });
    logger.info('late-secret-9 before');
    redactor.add('late-secret-9');
    logger.info('late-secret-9 after');
    expect(out.lines().map((line) => line['msg'])).toEqual(['late-secret-9 before', '[REDACTED] after']);
  });
});
