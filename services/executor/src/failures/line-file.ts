import { type FileHandle, open } from 'node:fs/promises';

/** Bytes read from a file at a time when it is scanned line by line. */
export const SCAN_CHUNK_BYTES = 1024 * 1024;

/** A line of a file as scanned: its text (without the newline), where it starts and its bytes (the newline left out). */
export interface ScannedLine {
  readonly text: string;
  readonly offset: number;
  readonly bytes: number;
}

/**
 * Calls `each` with every newline-ended line of a file, in order, reading it a chunk at a time and decoding each
 * chunk's whole lines as one text; a last line without its newline (torn by a crash mid-write) is left out. Answers the
 * bytes read (the torn line's included); a missing file has none.
 */
export async function scanLines(path: string, each: (line: ScannedLine) => void | Promise<void>): Promise<number> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  try {
    let carried = Buffer.alloc(0);
    let carriedAt = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(SCAN_CHUNK_BYTES);
      const { bytesRead } = await handle.read(chunk, 0, SCAN_CHUNK_BYTES, null);
      if (bytesRead === 0) return carriedAt + carried.length;
      const data = carried.length === 0 ? chunk.subarray(0, bytesRead) : Buffer.concat([carried, chunk.subarray(0, bytesRead)]);
      // the bytes of the chunk's whole lines, decoded at once: one text is cheaper than a Buffer a line
      const whole = data.lastIndexOf(NEWLINE) + 1;
      const text = data.toString('utf8', 0, whole);
      // a text as long as its bytes is ASCII: a line's bytes are its length
      const ascii = text.length === whole;
      let offset = carriedAt;
      let start = 0;
      for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
        const line = text.slice(start, end);
        const bytes = ascii ? line.length : Buffer.byteLength(line);
        const waiting = each({ text: line, offset, bytes });
        if (waiting !== undefined) await waiting;
        offset += bytes + 1;
        start = end + 1;
      }
      carried = data.subarray(whole);
      carriedAt += whole;
    }
  } finally {
    await handle.close();
  }
}

const NEWLINE = 0x0a;

/** The text of `length` bytes of a file from `offset`. */
export async function readAt(path: string, offset: number, length: number): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const bytes = Buffer.alloc(length);
    const { bytesRead } = await handle.read(bytes, 0, length, offset);
    return bytes.toString('utf8', 0, bytesRead);
  } finally {
    await handle.close();
  }
}
