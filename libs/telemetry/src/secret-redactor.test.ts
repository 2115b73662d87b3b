import { describe, expect, it } from 'vitest';
import { REDACTED, SecretRedactor } from './secret-redactor.js';

describe('SecretRedactor', () => {
  it('replaces every occurrence of every registered secret', () => {
    const redactor = new SecretRedactor();
    redactor.add('alpha-secret');
    redactor.add('beta-secret');
    expect(redactor.redact('alpha-secret, beta-secret, alpha-secret.')).toBe(`${REDACTED}, ${REDACTED}, ${REDACTED}.`);
  });

  it('replaces the longest secret first, so a secret containing another is removed whole', () => {
    const redactor = new SecretRedactor();
    redactor.add('pass');
    redactor.add('password-123');
    expect(redactor.redact('x password-123 y pass')).toBe(`x ${REDACTED} y ${REDACTED}`);
  });

  it('never rescans its own replacement', () => {
    const redactor = new SecretRedactor();
    redactor.add('DACT');
    redactor.add('token');
    expect(redactor.redact('token DACT')).toBe(`${REDACTED} ${REDACTED}`);
  });

  it('also replaces the JSON-escaped form of a secret', () => {
    const redactor = new SecretRedactor();
    const secret = 'a"b\\c\nd';
    redactor.add(secret);
    const line = JSON.stringify({ msg: `value ${secret}` });
    expect(redactor.redact(line)).toBe(JSON.stringify({ msg: `value ${REDACTED}` }));
    expect(redactor.redact(`raw ${secret}`)).toBe(`raw ${REDACTED}`);
  });

  it('treats regular-expression characters literally', () => {
    const redactor = new SecretRedactor();
    redactor.add('a.b*c');
    expect(redactor.redact('aXbbc a.b*c')).toBe(`aXbbc ${REDACTED}`);
  });

  it('ignores empty strings and counts distinct secrets', () => {
    const redactor = new SecretRedactor();
    redactor.add('');
    redactor.add('one1');
    redactor.add('one1');
    expect(redactor.size).toBe(1);
    expect(redactor.redact('')).toBe('');
  });

  it('registers short secrets too, at the price of over-redacting', () => {
    const redactor = new SecretRedactor();
    redactor.add('ab');
    expect(redactor.redact('cab')).toBe(`c${REDACTED}`);
  });

  it('redacts values deeply without touching the original', () => {
    const redactor = new SecretRedactor();
    redactor.add('s3cret');
    const value = { user: 'ann', token: 's3cret', list: ['x s3cret', 4, true], nested: { s3cret: null }, when: new Date(0) };
    expect(redactor.redactValue(value)).toEqual({
      user: 'ann',
      token: REDACTED,
      list: [`x ${REDACTED}`, 4, true],
      nested: { [REDACTED]: null },
      when: new Date(0),
    });
    expect(value.token).toBe('s3cret');
    expect(redactor.redactValue('s3cret')).toBe(REDACTED);
    expect(redactor.redactValue(7)).toBe(7);
  });

  it('copes with cycles', () => {
    const redactor = new SecretRedactor();
    redactor.add('s3cret');
    const value: Record<string, unknown> = { token: 's3cret' };
    value['self'] = value;
    const redacted = redactor.redactValue(value) as Record<string, unknown>;
    expect(redacted['token']).toBe(REDACTED);
    expect(redacted['self']).toBe(redacted);
  });

  it('returns input unchanged while nothing is registered', () => {
    const redactor = new SecretRedactor();
    const value = { a: 'b' };
    expect(redactor.redactValue(value)).toBe(value);
    expect(redactor.redact('text')).toBe('text');
  });
});
