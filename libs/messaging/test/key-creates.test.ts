import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMessaging, JetStreamRequestError, type Messaging, MessagingClosedError, MessagingUnavailableError } from '../src/index.js';
import { testMessagingSettings } from '../src/testing.js';

const binary = natsServerBinary('messaging key-value creates');

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const entry = (key: string, text: string): { key: string; value: Uint8Array } => ({ key, value: encoder.encode(text) });

describe.skipIf(binary === undefined)('key-value creates answered through one subscription, on a real nats-server', () => {
  let server: NatsTestServer;
  let messaging: Messaging;
  beforeAll(async () => {
    server = await startNatsServer();
    messaging = await connectMessaging(testMessagingSettings(server.url));
  });
  afterAll(async () => {
    await messaging?.close();
    await server?.stop();
  });

  it('creates new keys, answers exists for a key that holds a value or a delete marker, and leaves those as they were', async () => {
    const bucket = await messaging.keyValue('CREATES_TEST');
    await bucket.put('kept', encoder.encode('before'));
    await bucket.put('deleted', encoder.encode('gone'));
    await bucket.delete('deleted');
    const outcomes = await messaging.createKeys('CREATES_TEST', [entry('a', 'one'), entry('kept', 'after'), entry('b', 'two'), entry('deleted', 'again')]);
    expect(outcomes).toEqual(['created', 'exists', 'created', 'exists']);
    const values = await Promise.all(['a', 'kept', 'b'].map(async (key) => decoder.decode((await bucket.get(key))?.value)));
    expect(values).toEqual(['one', 'before', 'two']);
    expect((await bucket.get('deleted'))?.operation).toBe('DEL');
    expect(await messaging.createKeys('CREATES_TEST', [])).toEqual([]);
  });

  it('answers full past the bucket’s bytes, and refuses a bucket that does not exist by name', async () => {
    await messaging.keyValue('CREATES_FULL', { maxBytes: 1000 });
    const big = 'x'.repeat(300);
    expect(await messaging.createKeys('CREATES_FULL', [entry('a', big), entry('b', big), entry('c', big), entry('d', big)])).toEqual([
      'created',
      'created',
      'full',
      'full',
    ]);
    const refused = messaging.createKeys('NO_SUCH_BUCKET', [entry('a', 'one')]);
    await expect(refused).rejects.toBeInstanceOf(JetStreamRequestError);
    await expect(refused).rejects.toThrow("no JetStream stream takes the keys of bucket 'NO_SUCH_BUCKET'");
  });

  it('is a MessagingUnavailableError when no answer comes in time, and refused once the connection is closed', async () => {
    const own = await startNatsServer();
    const short = await connectMessaging({ ...testMessagingSettings(own.url), requestTimeoutMs: 300 });
    try {
      await short.keyValue('CREATES_STOPPED');
      await own.stop();
      // the client holds the publishes for its reconnect; no answer comes
      await expect(short.createKeys('CREATES_STOPPED', [entry('a', 'one')])).rejects.toBeInstanceOf(MessagingUnavailableError);
      // one waiting when the connection closes ends then, not at its time-out
      // (its expectation attached before the close, which rejects it)
      const refused = expect(short.createKeys('CREATES_STOPPED', [entry('b', 'two')])).rejects.toBeInstanceOf(MessagingClosedError);
      await short.close();
      await refused;
    } finally {
      await short.close();
      await own.stop();
    }
    expect(() => short.createKeys('CREATES_STOPPED', [entry('a', 'one')])).toThrow(MessagingClosedError);
  });
});
