import { describe, expect, it } from 'vitest';
import { configError } from './expect-config-error.js';
import { testDirectory } from './test-directory.js';
import { loadConfig } from '../src/index.js';

const CERTIFICATE = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----\n';
const PRIVATE_KEY = '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\n';
const CREDENTIALS = [
  '-----BEGIN NATS USER JWT-----',
  'eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJzdWIiOiJVQSJ9.c2lnbmF0dXJl',
  '------END NATS USER JWT------',
  '',
  '************************* IMPORTANT *************************',
  '',
  '-----BEGIN USER NKEY SEED-----',
  'SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU',
  '------END USER NKEY SEED------',
  '',
].join('\n');

const { file } = testDirectory('loom-config-messaging-');

describe('loom.messaging keys', () => {
  it('default to the in-memory mode, with sound stream and consumer settings', () => {
    const { messaging } = loadConfig({ env: {} });
    expect(messaging.nats.servers).toBeUndefined();
    expect(messaging.stream).toEqual({ replicas: 1, maxAgeMs: 0, maxBytes: 1024 ** 3, duplicateWindowMs: 120_000, keepProcessedMs: 0 });
    expect(messaging.consumer).toEqual({ ackWaitMs: 30_000, maxDeliver: 10, maxAckPending: 1000 });
  });

  it('read the servers as a list of nats:// and tls:// URLs', () => {
    const env = { LOOM_MESSAGING_NATS_SERVERS: 'nats://nats-0:4222, tls://nats-1.example:4443,nats://[::1]:4222' };
    expect(loadConfig({ env }).messaging.nats.servers).toEqual(['nats://nats-0:4222', 'tls://nats-1.example:4443', 'nats://[::1]:4222']);
  });

  it.each(['http://nats:4222', 'nats://', 'nats://a:4222,', 'nats://a:4222/path', 'nats-0:4222'])('refuse the servers %j, naming the key', (servers) => {
    const error = configError(() => loadConfig({ env: { LOOM_MESSAGING_NATS_SERVERS: servers } }));
    expect(error.key).toBe('loom.messaging.nats.servers');
    expect(error.message).toMatch(/expected a comma-separated list of nats:\/\/ or tls:\/\/ URLs/);
  });

  it('take the token, credentials and PEM texts from _FILE variables', () => {
    const env = {
      LOOM_MESSAGING_NATS_SERVERS: 'tls://nats:4222',
      LOOM_MESSAGING_NATS_CREDENTIALS_FILE: file('loom.creds', CREDENTIALS),
      LOOM_MESSAGING_NATS_TLS_CA_FILE: file('ca.pem', CERTIFICATE),
      LOOM_MESSAGING_NATS_TLS_CERT_FILE: file('cert.pem', CERTIFICATE),
      LOOM_MESSAGING_NATS_TLS_KEY_FILE: file('key.pem', PRIVATE_KEY),
    };
    const { nats } = loadConfig({ env }).messaging;
    expect(nats.credentials).toBe(CREDENTIALS.trimEnd());
    expect(nats.tls).toEqual({ ca: CERTIFICATE.trimEnd(), cert: CERTIFICATE.trimEnd(), key: PRIVATE_KEY.trimEnd() });
    expect(loadConfig({ env: { LOOM_MESSAGING_NATS_TOKEN_FILE: file('token', 's3cret-nats-token\n') } }).messaging.nats.token).toBe('s3cret-nats-token');
  });

  it('never repeat a secret that is not valid in the error', () => {
    const error = configError(() => loadConfig({ env: { LOOM_MESSAGING_NATS_CREDENTIALS: 'SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU' } }));
    expect(error.key).toBe('loom.messaging.nats.credentials');
    expect(error.message).not.toContain('SUAMLK2');
    const keyError = configError(() => loadConfig({ env: { LOOM_MESSAGING_NATS_TLS_KEY: 'not a key: hunter2' } }));
    expect(keyError.message).not.toContain('hunter2');
  });

  it('refuse a token and credentials together, and a client certificate without its key', () => {
    const both = configError(() => loadConfig({ env: { LOOM_MESSAGING_NATS_TOKEN: 't0ken', LOOM_MESSAGING_NATS_CREDENTIALS: CREDENTIALS } }));
    expect(both.key).toBe('loom.messaging.nats.credentials');
    expect(both.message).not.toContain('t0ken');
    const lone = configError(() => loadConfig({ env: { LOOM_MESSAGING_NATS_TLS_CERT: CERTIFICATE } }));
    expect(lone.key).toBe('loom.messaging.nats.tls.key');
    expect(lone.message).toMatch(/since loom.messaging.nats.tls.cert is set \(from environment variable LOOM_MESSAGING_NATS_TLS_CERT\)/);
  });

  it.each([
    ['LOOM_MESSAGING_STREAM_REPLICAS', '6', 'loom.messaging.stream.replicas'],
    ['LOOM_MESSAGING_STREAM_MAXBYTES', '0', 'loom.messaging.stream.maxBytes'],
    ['LOOM_MESSAGING_STREAM_KEEPPROCESSEDMS', '-1', 'loom.messaging.stream.keepProcessedMs'],
    ['LOOM_MESSAGING_CONSUMER_ACKWAITMS', '50', 'loom.messaging.consumer.ackWaitMs'],
    ['LOOM_MESSAGING_CONSUMER_MAXACKPENDING', '0', 'loom.messaging.consumer.maxAckPending'],
  ])('refuse %s=%s', (variable, value, key) => {
    expect(configError(() => loadConfig({ env: { [variable]: value } })).key).toBe(key);
  });
});
