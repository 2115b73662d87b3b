import { type PGlite } from '@electric-sql/pglite';

const READY_FOR_QUERY = 0x5a; // 'Z'
const STATUS_IDLE = 0x49; // 'I'
const TERMINATE = 0x58; // 'X'
const SYNC_MESSAGE = new Uint8Array([0x53, 0, 0, 0, 4]);
const HEADER_LENGTH = 5;

/** Reads the backend's reply stream and keeps the transaction status byte of the last ReadyForQuery message. */
export class ReadyForQueryTracker {
  private readonly header = new Uint8Array(HEADER_LENGTH);
  private headerLength = 0;
  private bodyRemaining = 0;
  private readingStatus = false;
  /** Status of the last ReadyForQuery since reset(): 'I' (0x49) idle, 'T' in a transaction, 'E' in a failed one. */
  lastStatus: number | undefined;

  /** Forgets the last status; called before each request. */
  reset(): void {
    this.lastStatus = undefined;
  }

  /** Consumes one chunk of backend messages; a message may span chunks. */
  feed(chunk: Uint8Array): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.bodyRemaining > 0) {
        if (this.readingStatus) {
          this.lastStatus = chunk[offset];
          this.readingStatus = false;
        }
        const skipped = Math.min(this.bodyRemaining, chunk.length - offset);
        offset += skipped;
        this.bodyRemaining -= skipped;
        continue;
      }
      this.header[this.headerLength++] = chunk[offset++] ?? 0;
      if (this.headerLength < HEADER_LENGTH) continue;
      this.headerLength = 0;
      this.bodyRemaining = Math.max(0, new DataView(this.header.buffer).getInt32(1) - 4);
      this.readingStatus = this.header[0] === READY_FOR_QUERY && this.bodyRemaining > 0;
    }
  }
}

/**
 * Wraps PGlite for PGLiteSocketServer so that its one backend session passes to another connection only between
 * requests (after a ReadyForQuery with status idle), not merely outside transaction blocks.
 *
 * PGLiteSocketServer queues every frontend message of every connection in one queue and keeps the queue on the
 * same connection only while `db.isInTransaction()`. The extended query protocol (Parse, Bind, Execute, Sync: every
 * pg query with parameters) keeps its unnamed statement until Sync, so another connection's Parse arriving in between
 * replaces it and the first connection executes the other one's statement (electric-sql/pglite#1046, #977). Reporting
 * "in a transaction" until the backend is idle again makes the server's own affinity cover the whole request.
 */
export function withSessionAffinity(db: PGlite, onCleanupError: (error: unknown) => void): PGlite {
  const tracker = new ReadyForQueryTracker();
  let sessionOpen = false;

  const execProtocolRawStream: PGlite['execProtocolRawStream'] = async (message, options) => {
    // PGlite ignores Terminate and answers nothing, so it neither opens nor closes the session
    if (message[0] === TERMINATE) return db.execProtocolRawStream(message, options);
    tracker.reset();
    try {
      await db.execProtocolRawStream(message, {
        ...options,
        onRawData: (data) => {
          tracker.feed(data);
          options?.onRawData(data);
        },
      });
    } finally {
      sessionOpen = tracker.lastStatus !== STATUS_IDLE;
    }
  };

  // The server calls exec('ROLLBACK') only when the connection holding the session goes away, from a promise nobody
  // awaits, so this reports a failure (PGlite closing under it) instead of rejecting.
  const exec: PGlite['exec'] = async (query, options) => {
    try {
      if (sessionOpen) {
        // that connection may have left a request without its Sync; until one arrives the backend would skip the ROLLBACK
        await db.runExclusive(() => db.execProtocolRawStream(SYNC_MESSAGE, { onRawData: () => undefined }));
      }
      return await db.exec(query, options);
    } catch (error) {
      onCleanupError(error);
      return [];
    } finally {
      sessionOpen = !db.closed && db.isInTransaction();
    }
  };

  const isInTransaction = (): boolean => sessionOpen || db.isInTransaction();

  return new Proxy(db, {
    get(target, property) {
      if (property === 'execProtocolRawStream') return execProtocolRawStream;
      if (property === 'exec') return exec;
      if (property === 'isInTransaction') return isInTransaction;
      // PGlite keeps its state in private fields, so its getters and methods must see the real instance as `this`
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
