import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { ModelLoadError } from './errors.js';

const MAGIC = 'LOOMNLP1';

/** A model file's parts: a JSON header and named binary sections. */
export interface ModelFile {
  readonly header: Record<string, unknown>;
  readonly sections: ReadonlyMap<string, Uint8Array>;
}

/** Serialises a model (magic, header length, JSON header with the section table, the sections) and returns its bytes. */
export function encodeModelFile(header: Record<string, unknown>, sections: ReadonlyMap<string, Uint8Array>): Buffer {
  const table: { name: string; offset: number; length: number }[] = [];
  let offset = 0;
  for (const [name, bytes] of sections) {
    table.push({ name, offset, length: bytes.length });
    offset += bytes.length;
  }
  const json = Buffer.from(JSON.stringify({ ...header, sections: table }), 'utf8');
  const prefix = Buffer.alloc(MAGIC.length + 4);
  prefix.write(MAGIC, 0, 'latin1');
  prefix.writeUInt32LE(json.length, MAGIC.length);
  return Buffer.concat([prefix, json, ...[...sections.values()].map((part) => Buffer.from(part.buffer, part.byteOffset, part.length))]);
}

/** Writes a model file and returns its SHA-256 (hex). */
export function writeModelFile(path: string, header: Record<string, unknown>, sections: ReadonlyMap<string, Uint8Array>): string {
  const bytes = encodeModelFile(header, sections);
  writeFileSync(path, bytes);
  return sha256(bytes);
}

/** SHA-256 of bytes, hex. */
export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Reads a model file, checking its SHA-256 against the card's; a missing, corrupt or truncated file is a ModelLoadError. */
export function readModelFile(model: string, path: string, expectedSha256: string): ModelFile {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new ModelLoadError(model, `cannot read ${path}`, { cause: error });
  }
  const actual = sha256(bytes);
  if (actual !== expectedSha256) throw new ModelLoadError(model, `checksum mismatch for ${path}: expected ${expectedSha256}, found ${actual}`);
  return decodeModelFile(model, bytes);
}

/** Parses model bytes (checksum already verified). */
export function decodeModelFile(model: string, bytes: Buffer): ModelFile {
  if (bytes.length < MAGIC.length + 4 || bytes.toString('latin1', 0, MAGIC.length) !== MAGIC) throw new ModelLoadError(model, 'not a loom NLP model file');
  const headerLength = bytes.readUInt32LE(MAGIC.length);
  const start = MAGIC.length + 4 + headerLength;
  if (start > bytes.length) throw new ModelLoadError(model, 'model file truncated in its header');
  const header = JSON.parse(bytes.toString('utf8', MAGIC.length + 4, start)) as Record<string, unknown> & {
    sections: { name: string; offset: number; length: number }[];
  };
  const sections = new Map<string, Uint8Array>();
  for (const entry of header.sections) {
    if (start + entry.offset + entry.length > bytes.length) throw new ModelLoadError(model, `model file truncated in section ${entry.name}`);
    sections.set(entry.name, new Uint8Array(bytes.buffer, bytes.byteOffset + start + entry.offset, entry.length));
  }
  return { header, sections };
}

/** Section of a model file, or a ModelLoadError naming it. */
export function section(model: string, file: ModelFile, name: string): Uint8Array {
  const bytes = file.sections.get(name);
  if (!bytes) throw new ModelLoadError(model, `section '${name}' missing`);
  return bytes;
}

/** Bytes of a weights section's header: the dense length, the entry count (uint32 each) and the scale (float32). */
const WEIGHTS_HEADER_BYTES = 12;
/** Largest magnitude of a quantised (int16) weight. */
const MAX_QUANTISED = 32767;
/** Most bytes of one entry: a varint delta of up to five bytes and its int16 value (plus one byte once, to align the values). */
const MAX_ENTRY_BYTES = 7;

/**
 * Encodes weights sparsely: the non-zero entries after quantisation to 16 bits, indices as
 * varint deltas. Entries whose magnitude is under `prune` × the largest are dropped.
 */
export function encodeWeights(weights: Float32Array, prune = 0): Uint8Array {
  let max = 0;
  for (const weight of weights) max = Math.max(max, Math.abs(weight));
  const scale = max > 0 ? max / MAX_QUANTISED : 1;
  const floor = prune * max;
  const indices: number[] = [];
  const values: number[] = [];
  for (let index = 0; index < weights.length; index++) {
    const weight = weights[index]!;
    if (weight === 0 || Math.abs(weight) < floor) continue;
    const quantised = Math.round(weight / scale);
    if (quantised === 0) continue;
    indices.push(index);
    values.push(quantised);
  }
  const out = Buffer.alloc(WEIGHTS_HEADER_BYTES + 1 + indices.length * MAX_ENTRY_BYTES);
  out.writeUInt32LE(weights.length, 0);
  out.writeUInt32LE(indices.length, 4);
  out.writeFloatLE(scale, 8);
  let at = WEIGHTS_HEADER_BYTES;
  let previous = 0;
  for (const index of indices) {
    let delta = index - previous;
    previous = index;
    while (delta >= 0x80) {
      out[at++] = (delta & 0x7f) | 0x80;
      delta >>>= 7;
    }
    out[at++] = delta;
  }
  if (at % 2 === 1) at++;
  for (const value of values) {
    out.writeInt16LE(value, at);
    at += 2;
  }
  return new Uint8Array(out.buffer, out.byteOffset, at);
}

/** Decodes weights written by encodeWeights into a dense array. */
export function decodeWeights(model: string, bytes: Uint8Array): Float32Array {
  if (bytes.length < WEIGHTS_HEADER_BYTES) throw new ModelLoadError(model, 'weights section truncated');
  const header = new DataView(bytes.buffer, bytes.byteOffset, WEIGHTS_HEADER_BYTES);
  const size = header.getUint32(0, true);
  const count = header.getUint32(4, true);
  const scale = header.getFloat32(8, true);
  const weights = new Float32Array(size);
  const indices = new Int32Array(count);
  const end = bytes.length;
  let at = WEIGHTS_HEADER_BYTES;
  let index = 0;
  for (let entry = 0; entry < count; entry++) {
    let delta = 0;
    let factor = 1;
    for (;;) {
      if (at >= end) throw new ModelLoadError(model, 'weights section truncated');
      const byte = bytes[at++]!;
      delta += (byte & 0x7f) * factor;
      if (byte < 0x80) break;
      factor *= 128;
    }
    index += delta;
    if (index >= size) throw new ModelLoadError(model, 'weights section corrupt');
    indices[entry] = index;
  }
  if (at % 2 === 1) at++;
  if (at + count * 2 > end) throw new ModelLoadError(model, 'weights section truncated');
  // One typed-array view over the 16-bit values instead of a read per entry; a copy first when the
  // section does not start on an even address (the file's header has any length).
  const start = bytes.byteOffset + at;
  const values = start % 2 === 0 && LITTLE_ENDIAN ? new Int16Array(bytes.buffer, start, count) : littleEndianInt16(bytes.subarray(at, at + count * 2));
  for (let entry = 0; entry < count; entry++) weights[indices[entry]!] = values[entry]! * scale;
  return weights;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Little-endian 16-bit integers in an aligned array of their own. */
function littleEndianInt16(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length / 2);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  for (let entry = 0; entry < out.length; entry++) out[entry] = view.getInt16(entry * 2, true);
  return out;
}

/** Encodes a list of strings as UTF-8 lines. */
export function encodeStrings(items: readonly string[]): Uint8Array {
  return Buffer.from(items.join('\n'), 'utf8');
}

/** Decodes a list written by encodeStrings. */
export function decodeStrings(bytes: Uint8Array): string[] {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8');
  return text.length === 0 ? [] : text.split('\n');
}
