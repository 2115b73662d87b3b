import { type FileHandle, open } from 'node:fs/promises';

/** Bytes read from a file at a time when it is scanned line by line. */
export const SCAN_CHUNK_BYTES = 1024 * 1024;

/** A line of a file as scanned: its bytes (without the newline) and where it starts. */
export interface ScannedLine {
  readonly text: Buffer;
  readonly offset: number;
}

/**
 * Calls `each` with every newline-ended line of a file, in order, reading it a chunk at a time; a last line without its
 * newline (torn by a crash mid-write) is left out. Answers the bytes read (the torn line's included); a missing file
 * has none.
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
      let start = 0;
      for (let end = data.indexOf(0x0a); end >= 0; end = data.indexOf(0x0a, start)) {
        const waiting = each({ text: data.subarray(start, end), offset: carriedAt + start });
        if (waiting !== undefined) await waiting;
        start = end + 1;
      }
      carried = data.subarray(start);
      carriedAt += start;
    }
  } finally {
    await handle.close();
  }
}

/** `length` bytes of a file from `offset`. */
export async function readAt(path: string, offset: number, length: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const text = Buffer.alloc(length);
    const { bytesRead } = await handle.read(text, 0, length, offset);
    return text.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
