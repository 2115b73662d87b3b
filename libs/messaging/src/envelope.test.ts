import { describe, expect, it } from 'vitest';
import { decodeEnvelope, encodeEnvelope, envelopeCount, EnvelopeFormatError, type EnvelopeMessage, envelopeMessageId } from './envelope.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('the batch envelope (version 1)', () => {
  it('reads back each message’s id, headers and payload bytes, in order', () => {
    const messages: EnvelopeMessage[] = [
      { id: 'm-1', headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'x-ü': 'ä' }, payload: bytes('{"n":1}') },
      { id: 'ß-2', headers: {}, payload: new Uint8Array([0, 255, 10]) },
      { id: 'm-3', headers: {}, payload: new Uint8Array() },
    ];
    const encoded = encodeEnvelope(messages);
    expect(envelopeCount(encoded)).toBe(3);
    const decoded = decodeEnvelope(encoded);
    expect(decoded.map(({ id, headers, payload }) => ({ id, headers, payload: [...payload] }))).toEqual(
      messages.map(({ id, headers, payload }) => ({ id, headers, payload: [...payload] })),
    );
  });

  it('refuses bytes that do not read as an envelope, saying where', () => {
    const encoded = encodeEnvelope([{ id: 'm-1', headers: {}, payload: bytes('{}') }]);
    expect(() => decodeEnvelope(encoded.subarray(0, encoded.length - 1))).toThrow(/message 0's payload runs past its end/);
    expect(() => decodeEnvelope(Buffer.concat([encoded, Buffer.from([1])]))).toThrow(/1 bytes follow its last message/);
    expect(() => decodeEnvelope(bytes('{"n":1}'))).toThrow(EnvelopeFormatError);
    expect(() => decodeEnvelope(new Uint8Array([0, 0]))).toThrow(/no message count/);
  });

  it('names a batch by its ids in order: the same ids the same JetStream id, any other list another', () => {
    expect(envelopeMessageId(['a', 'b'])).toBe(envelopeMessageId(['a', 'b']));
    expect(envelopeMessageId(['a', 'b'])).not.toBe(envelopeMessageId(['b', 'a']));
    expect(envelopeMessageId(['a', 'b'])).not.toBe(envelopeMessageId(['a', 'b', 'c']));
    // length-prefixed: no split of the same characters hashes alike
    expect(envelopeMessageId(['ab', 'c'])).not.toBe(envelopeMessageId(['a', 'bc']));
    expect(envelopeMessageId(['a'])).toMatch(/^loom-batch:[A-Za-z0-9_-]{43}$/);
  });
});
