import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { base64Key, boolean, decimal, hostPort, httpUrl, integer, natsCredentials, natsUrls, optional, pem, postgresUrl, token } from './value-schemas.js';

const accepts = (schema: { safeParse(value: unknown): { success: boolean } }, value: unknown) => schema.safeParse(value).success;

describe('integer', () => {
  const port = integer(0, 65535);

  it('takes numbers and their decimal text', () => {
    expect(port.parse(8100)).toBe(8100);
    expect(port.parse('8100')).toBe(8100);
    expect(port.parse('0')).toBe(0);
  });

  it.each(['abc', '', ' 1', '1 ', '1.0', '1e3', '0x10', '65536', '-1'])('rejects %j', (text) => {
    expect(accepts(port, text)).toBe(false);
  });

  it('rejects non-integers and other types', () => {
    expect(accepts(port, 1.5)).toBe(false);
    expect(accepts(port, true)).toBe(false);
    expect(accepts(integer(0), '99999999999999999999')).toBe(false);
  });
});

describe('boolean', () => {
  it('takes only true and false', () => {
    expect(boolean().parse('true')).toBe(true);
    expect(boolean().parse('false')).toBe(false);
    expect(boolean().parse(false)).toBe(false);
    for (const text of ['yes', 'no', '1', '0', 'TRUE', 'True', '', 'on']) expect(accepts(boolean(), text)).toBe(false);
  });
});

describe('decimal', () => {
  it('takes numbers in range, from text too', () => {
    const ratio = decimal(0, 1);
    expect(ratio.parse('0.25')).toBe(0.25);
    expect(ratio.parse('.5')).toBe(0.5);
    expect(ratio.parse('1')).toBe(1);
    expect(ratio.parse(0)).toBe(0);
    for (const text of ['1.5', '-0.1', 'half', '', 'NaN', 'Infinity']) expect(accepts(ratio, text)).toBe(false);
  });
});

describe('base64Key', () => {
  it('takes base64 of exactly 32 bytes', () => {
    const key = randomBytes(32).toString('base64');
    expect(base64Key().parse(key)).toBe(key);
    expect(accepts(base64Key(), key.replace(/=$/, ''))).toBe(true);
  });

  it('rejects other lengths and text that is not base64', () => {
    expect(accepts(base64Key(), randomBytes(31).toString('base64'))).toBe(false);
    expect(accepts(base64Key(), randomBytes(33).toString('base64'))).toBe(false);
    expect(accepts(base64Key(), 'not base64 at all, not at all!!!!!!!!!!!!!!!')).toBe(false);
    expect(
      accepts(
        base64Key(),
        randomBytes(32)
          .toString('base64url')
          .replace(/[A-Za-z0-9]/g, '-'),
      ),
    ).toBe(false);
  });
});

describe('hostPort', () => {
  it.each(['localhost:8100', 'secrets.loom.svc.cluster.local:8100', '10.0.0.7:1', '[::1]:8100'])('accepts %s', (address) => {
    expect(accepts(hostPort(), address)).toBe(true);
  });

  it.each(['localhost', ':8100', 'localhost:0', 'localhost:70000', 'http://localhost:8100', 'a b:1'])('rejects %s', (address) => {
    expect(accepts(hostPort(), address)).toBe(false);
  });
});

describe('URLs', () => {
  it('accepts only the expected schemes', () => {
    expect(accepts(postgresUrl(), 'postgres://loom:pw@db:5432/loom')).toBe(true);
    expect(accepts(postgresUrl(), 'postgresql://db/loom')).toBe(true);
    expect(accepts(postgresUrl(), 'mysql://db/loom')).toBe(false);
    expect(accepts(httpUrl(), 'http://collector:4318')).toBe(true);
    expect(accepts(httpUrl(), 'collector:4318')).toBe(false);
  });
});

describe('token', () => {
  it('needs 16 printable characters without spaces', () => {
    expect(accepts(token(), 'a'.repeat(16))).toBe(true);
    expect(accepts(token(), 'a'.repeat(15))).toBe(false);
    expect(accepts(token(), `${'a'.repeat(16)} `)).toBe(false);
  });
});

describe('optional', () => {
  it('reads an empty string as not set', () => {
    expect(optional(httpUrl()).parse('')).toBeUndefined();
    expect(accepts(optional(httpUrl()), 'nope')).toBe(false);
  });
});

describe('natsUrls', () => {
  it('reads a comma-separated list of nats:// and tls:// URLs, spaces trimmed', () => {
    expect(natsUrls().parse('nats://a:4222')).toEqual(['nats://a:4222']);
    expect(natsUrls().parse('nats://a, tls://b:4443/')).toEqual(['nats://a', 'tls://b:4443/']);
  });

  it.each(['', 'a:4222', 'ws://a:8080', 'nats://a:4222,,nats://b', 'nats://a:4222?x=1', 'nats://a:99999', 'nats://user:pw@a:4222'])('rejects %j', (text) => {
    expect(accepts(natsUrls(), text)).toBe(false);
  });
});

describe('pem and natsCredentials', () => {
  it('take PEM text with a block of the label, any kind of private key', () => {
    expect(accepts(pem('CERTIFICATE'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----')).toBe(true);
    expect(accepts(pem('PRIVATE KEY'), '-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n')).toBe(true);
    expect(accepts(pem('PRIVATE KEY'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----')).toBe(false);
    expect(accepts(pem('CERTIFICATE'), '/etc/nats/ca.pem')).toBe(false);
  });

  it('takes a .creds file with its user JWT and nkey seed, and nothing less', () => {
    const jwt = '-----BEGIN NATS USER JWT-----\neyJhbGciOi.eyJzdWIi.c2ln\n------END NATS USER JWT------';
    const seed = '-----BEGIN USER NKEY SEED-----\nSUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU\n------END USER NKEY SEED------';
    expect(accepts(natsCredentials(), `${jwt}\n\n${seed}\n`)).toBe(true);
    expect(accepts(natsCredentials(), jwt)).toBe(false);
    expect(accepts(natsCredentials(), seed)).toBe(false);
  });
});
