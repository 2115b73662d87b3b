import { createHash } from 'node:crypto';
import { type ErrorKind } from '@loom/domain';
import { MessagingError } from './errors.js';

/**
 * The batch envelope (issue 51): the messages one source publishes together stored as ONE JetStream message, so a
 * batch costs one JetStream publish, one delivery and one acknowledgement instead of one of each per message. The
 * JetStream message carries the header ENVELOPE_HEADER naming the format's version; a stored message without it is a
 * single message as loom stored them before (and still stores a batch of one), so a stream holding either drains.
 *
 * Version 1, all integers unsigned 32-bit big-endian: the message count, then per message its id (length, UTF-8), its
 * headers (length, a JSON object of strings, length 0 for none) and its payload (length, the bytes as published).
 */
export const ENVELOPE_HEADER = 'Loom-Envelope';
/** The version this loom writes. */
export const ENVELOPE_VERSION = '1';

/** One message of an envelope. */
export interface EnvelopeMessage {
  /** Its id: never empty (a message without an id is stored on its own, not in an envelope). */
  readonly id: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: Uint8Array;
}

/** An envelope's bytes do not read as the version they claim. */
export class EnvelopeFormatError extends MessagingError {
  readonly kind: ErrorKind = 'invalid-argument';

  constructor(reason: string) {
    super(`not a loom message envelope: ${reason}`);
  }
}

/** The bytes an envelope message adds besides its id, headers and payload (its three lengths). */
const ENVELOPE_MESSAGE_OVERHEAD = 12;
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** A message ready to go into an envelope: its id and headers as bytes, and the bytes it takes there. */
export interface PreparedMessage {
  readonly id: Buffer;
  readonly headers: Buffer | undefined;
  /** Bytes, or text written into the envelope as UTF-8 (no copy of its own first). */
  readonly payload: Uint8Array | string;
  readonly payloadBytes: number;
  /** Bytes it takes in an envelope. */
  readonly size: number;
}

/** Encodes a message's id and headers once, so a publisher can size its envelopes before writing them. */
export function prepareEnvelopeMessage(message: Omit<EnvelopeMessage, 'payload'> & { readonly payload: Uint8Array | string }): PreparedMessage {
  const id = Buffer.from(message.id, 'utf8');
  const headers = hasHeaders(message.headers) ? Buffer.from(JSON.stringify(message.headers), 'utf8') : undefined;
  const { payload } = message;
  const payloadBytes = typeof payload === 'string' ? Buffer.byteLength(payload, 'utf8') : payload.length;
  return { id, headers, payload, payloadBytes, size: ENVELOPE_MESSAGE_OVERHEAD + id.length + (headers?.length ?? 0) + payloadBytes };
}

/** The envelope's bytes (version ENVELOPE_VERSION). */
export function encodeEnvelope(messages: readonly EnvelopeMessage[]): Buffer {
  return encodePrepared(messages.map(prepareEnvelopeMessage));
}

/** The envelope's bytes (version ENVELOPE_VERSION) of prepared messages. */
export function encodePrepared(messages: readonly PreparedMessage[]): Buffer {
  let size = 4;
  for (const message of messages) size += message.size;
  const out = Buffer.allocUnsafe(size);
  let at = out.writeUInt32BE(messages.length, 0);
  for (const message of messages) {
    at = putBytes(out, at, message.id);
    at = message.headers === undefined ? out.writeUInt32BE(0, at) : putBytes(out, at, message.headers);
    const { payload } = message;
    if (typeof payload === 'string') {
      at = out.writeUInt32BE(message.payloadBytes, at);
      at += out.write(payload, at, 'utf8');
    } else at = putBytes(out, at, payload);
  }
  return out;
}

/** The messages of an envelope's bytes, in the order published; an EnvelopeFormatError when they do not read as version 1. */
export function decodeEnvelope(bytes: Uint8Array): EnvelopeMessage[] {
  const data = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return readEnvelope(data).map(({ id, headers, start, end }) => ({ id, headers, payload: data.subarray(start, end) }));
}

/** A message of an envelope as read: its id and headers, and where its payload lies in the envelope's bytes. */
export interface ReadMessage {
  readonly id: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly start: number;
  readonly end: number;
}

/**
 * Each message of an envelope's bytes (version 1) without copying a payload: a consumer reads each where it lies. An
 * EnvelopeFormatError when the bytes do not read as an envelope.
 */
export function readEnvelope(data: Buffer): ReadMessage[] {
  const endOf = (at: number, what: string): number => {
    if (at + 4 > data.length) throw new EnvelopeFormatError(`it ends inside the length of ${what}`);
    const end = at + 4 + data.readUInt32BE(at);
    if (end > data.length) throw new EnvelopeFormatError(`${what} runs past its end`);
    return end;
  };
  if (data.length < 4) throw new EnvelopeFormatError('it holds no message count');
  const count = data.readUInt32BE(0);
  const read: ReadMessage[] = [];
  let at = 4;
  for (let index = 0; index < count; index++) {
    const idEnd = endOf(at, `message ${index}'s id`);
    const headersEnd = endOf(idEnd, `message ${index}'s headers`);
    const end = endOf(headersEnd, `message ${index}'s payload`);
    const headers = headersEnd === idEnd + 4 ? NO_HEADERS : headersOf(data.toString('utf8', idEnd + 4, headersEnd), index);
    read.push({ id: data.toString('utf8', at + 4, idEnd), headers, start: headersEnd + 4, end });
    at = end;
  }
  if (at !== data.length) throw new EnvelopeFormatError(`${data.length - at} bytes follow its last message`);
  return read;
}

/** How many messages an envelope's bytes hold (its first field), without reading them. */
export function envelopeCount(bytes: Uint8Array): number {
  return bytes.length < 4 ? 0 : Buffer.from(bytes.buffer, bytes.byteOffset, 4).readUInt32BE(0);
}

/**
 * The JetStream message id of an envelope: derived from its messages' ids in order, so the same batch retried (the
 * same ids, as a client resends a call it got no answer for) is stored once by JetStream's de-duplication, whichever
 * executor takes the retry and across restarts. A batch sharing only some ids with an earlier one gets another id;
 * those messages are de-duplicated by id on the executor (recent-ids.ts).
 */
export function envelopeMessageId(ids: readonly string[]): string {
  // length-prefixed, so no id's characters can make two different lists hash alike; one update (each costs a call into C++)
  let text = '';
  for (const id of ids) text += `${id.length}:${id}`;
  return `loom-batch:${createHash('sha256').update(text).digest('base64url')}`;
}

function putBytes(out: Buffer, at: number, bytes: Uint8Array): number {
  const next = out.writeUInt32BE(bytes.length, at);
  out.set(bytes, next);
  return next + bytes.length;
}

function hasHeaders(headers: Readonly<Record<string, string>>): boolean {
  for (const _ in headers) return true;
  return false;
}

function headersOf(text: string, index: number): Readonly<Record<string, string>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new EnvelopeFormatError(`message ${index}'s headers are not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new EnvelopeFormatError(`message ${index}'s headers are not an object`);
  return parsed as Record<string, string>;
}
