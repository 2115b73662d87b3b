import { type FileHandle, mkdir, open, readdir, readFile, rename, truncate } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { FailedPreconditionError, UnavailableError } from '@loom/domain';
import { syncDirectory, withResolvers } from '@loom/foundation';
import { type AuditFacts, type AuditRecord, chainRecord, GENESIS_HASH, hashOf, parseLine } from './audit-record.js';

/** Where the log lives and when it rotates. */
export interface AuditLogOptions {
  /** The current file; rotated files sit beside it as `<name>.<first sequence, 12 digits>`. */
  readonly path: string;
  /** Size at which the current file is rotated. */
  readonly maxFileBytes: number;
}

/** What opening the log found. */
export interface Recovery {
  /** Bytes of a torn last line (a crash mid-write) that were cut off; 0 when the file ended cleanly. */
  readonly truncatedBytes: number;
  /** Sequence number of the last whole record (0 for an empty log). */
  readonly lastSequence: number;
}

/** Result of walking the chain. */
export interface Verification {
  readonly ok: boolean;
  readonly eventsChecked: number;
  /** First broken or missing sequence number; 0 when ok. */
  readonly firstBrokenSequence: number;
  readonly problem: string;
}

interface Pending {
  readonly record: AuditRecord;
  readonly line: string;
  resolve(record: AuditRecord): void;
  reject(error: unknown): void;
}

const ROTATED_SUFFIX = /\.(\d{12})$/;

/**
 * The audit log: one JSON line per event, hash-chained, acknowledged only once on disk. Appends that arrive while a
 * write is in progress share the next write and fdatasync (group commit). Any write failure stops the log: later
 * appends fail with UNAVAILABLE until a restart recovers it from the file, so nothing is acknowledged that is not
 * written, in order.
 */
export class AuditLog {
  private pending: Pending[] = [];
  private writing = false;
  /** Settles when the rotation in progress (if any) has finished. */
  private rotation: Promise<void> = Promise.resolve();
  private failure: unknown;
  private readonly listeners = new Set<(record: AuditRecord) => void>();
  private closed = false;
  private durable: number;

  private constructor(
    private readonly options: AuditLogOptions,
    private file: FileHandle,
    /** Bytes of the current file that are whole, durable records. */
    private size: number,
    private nextSequence: number,
    private lastHash: string,
    /** First sequence number of the current file (next one when it is empty). */
    private fileFirstSequence: number,
  ) {
    this.durable = nextSequence - 1;
  }

  /** Opens the log, cutting off a torn last line; the chain continues from the last whole record. */
  static async open(options: AuditLogOptions): Promise<{ log: AuditLog; recovery: Recovery }> {
    await mkdir(dirname(options.path), { recursive: true, mode: 0o700 });
    let text = '';
    try {
      text = await readFile(options.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const whole = wholePrefix(text);
    const truncatedBytes = Buffer.byteLength(text) - Buffer.byteLength(whole);
    if (truncatedBytes > 0) {
      await truncate(options.path, Buffer.byteLength(whole));
    }
    let last = lastRecord(whole);
    if (last === undefined && whole !== '') {
      // a whole line that is not a record was not torn by a crash: it was changed; continuing would hide that
      throw new AuditLogDamagedError(options.path);
    }
    let fileFirst = firstRecord(whole)?.seq;
    if (last === undefined) {
      // an empty current file: the chain goes on from the newest rotated file
      const rotated = await rotatedFiles(options.path);
      const newest = rotated.at(-1);
      if (newest !== undefined) last = lastRecord(wholePrefix(await readFile(newest.path, 'utf8')));
    }
    const nextSequence = (last?.seq ?? 0) + 1;
    fileFirst ??= nextSequence;
    const file = await open(options.path, 'a', 0o600);
    if (truncatedBytes > 0) await file.datasync();
    await syncDirectory(dirname(options.path));
    const log = new AuditLog(options, file, Buffer.byteLength(whole), nextSequence, last?.hash ?? GENESIS_HASH, fileFirst);
    return { log, recovery: { truncatedBytes, lastSequence: nextSequence - 1 } };
  }

  /** Appends an event; resolves with its record once it is on disk. */
  append(facts: AuditFacts): Promise<AuditRecord> {
    if (this.failure !== undefined || this.closed) return Promise.reject(this.unavailable());
    const { record, line } = chainRecord(facts, this.nextSequence, this.lastHash, new Date());
    this.nextSequence++;
    this.lastHash = record.hash;
    return new Promise((resolve, reject) => {
      this.pending.push({ record, line, resolve, reject });
      if (!this.writing) {
        this.writing = true;
        // started after the current task, so appends made together (one AppendBatch) share the first write
        queueMicrotask(() => void this.drain());
      }
    });
  }

  private unavailable(): UnavailableError {
    const reason = this.closed ? 'the audit log is closed' : `the audit log stopped after a write failure (${String(this.failure)}); restart the audit service`;
    return new UnavailableError(reason);
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      try {
        const data = Buffer.from(batch.map((entry) => entry.line).join(''));
        for (let offset = 0; offset < data.length;) offset += (await this.file.write(data, offset)).bytesWritten;
        await this.file.datasync();
        this.size += data.length;
        this.durable = (batch.at(-1) as Pending).record.seq;
      } catch (error) {
        this.failure = error;
        for (const entry of [...batch, ...this.pending.splice(0)]) entry.reject(this.unavailable());
        break;
      }
      for (const entry of batch) entry.resolve(entry.record);
      for (const entry of batch) for (const listener of this.listeners) listener(entry.record);
      if (this.size >= this.options.maxFileBytes) await this.rotate().catch((error: unknown) => (this.failure = error));
    }
    this.writing = false;
  }

  /** Renames the current file to `<name>.<its first sequence>` and starts a new one; the chain carries on. */
  private async rotate(): Promise<void> {
    const { promise: rotation, resolve: done } = withResolvers();
    this.rotation = rotation;
    try {
      await this.rotateFile();
    } finally {
      done();
    }
  }

  private async rotateFile(): Promise<void> {
    await this.file.close();
    await rename(this.options.path, this.rotatedPath(this.fileFirstSequence));
    this.file = await open(this.options.path, 'a', 0o600);
    await syncDirectory(dirname(this.options.path));
    this.size = 0;
    this.fileFirstSequence = this.durable + 1;
  }

  private rotatedPath(firstSequence: number): string {
    return `${this.options.path}.${String(firstSequence).padStart(12, '0')}`;
  }

  /**
   * The durable text of the current file as it was when `first` and `size` were read, even when it was rotated since:
   * readers list the files, then read them, and a rotation may fall in between.
   */
  private async readCurrent(first: number, size: number): Promise<string> {
    await this.rotation;
    const path = this.fileFirstSequence === first ? this.options.path : this.rotatedPath(first);
    return Buffer.from(await readFile(path))
      .subarray(0, size)
      .toString('utf8');
  }

  /** Every durable record from `fromSequence` on, oldest first, across rotated files. */
  async *records(fromSequence = 1): AsyncGenerator<AuditRecord> {
    await this.rotation;
    const files = [...(await rotatedFiles(this.options.path)), { path: this.options.path, first: this.fileFirstSequence }];
    const durableSize = this.size;
    for (const [index, file] of files.entries()) {
      const next = files[index + 1];
      if (next !== undefined && next.first <= fromSequence) continue;
      let text: string;
      try {
        text = file.path === this.options.path ? await this.readCurrent(file.first, durableSize) : await readFile(file.path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // rotated away while we looked
        throw error;
      }
      for (const line of text.split('\n')) {
        const record = parseLine(line);
        if (record !== undefined && record.seq >= fromSequence) yield record;
      }
    }
  }

  /** Calls `listener` with every record once it is durable, until the returned function is called. */
  subscribe(listener: (record: AuditRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Sequence number of the last durable record. */
  get durableSequence(): number {
    return this.durable;
  }

  /** Walks every file: sequence numbers without gaps from 1, each `prev` the previous hash, each hash recomputed. */
  async verify(): Promise<Verification> {
    await this.rotation;
    const files = [...(await rotatedFiles(this.options.path)), { path: this.options.path, first: this.fileFirstSequence }];
    const durableSize = this.size;
    let expected = 1;
    let prev = GENESIS_HASH;
    const broken = (sequence: number, problem: string): Verification => ({ ok: false, eventsChecked: expected - 1, firstBrokenSequence: sequence, problem });
    for (const file of files) {
      const text = file.path === this.options.path ? await this.readCurrent(file.first, durableSize) : await readFile(file.path, 'utf8');
      const lines = text.split('\n');
      if (lines.at(-1) === '') lines.pop();
      for (const [index, line] of lines.entries()) {
        const where = `${basename(file.path)} line ${index + 1}`;
        const record = parseLine(line);
        if (record === undefined) return broken(expected, `${where} is not a whole audit record`);
        if (record.seq !== expected) return broken(expected, `${where} has sequence ${record.seq} where ${expected} belongs (missing or reordered)`);
        if (record.prev !== prev) return broken(record.seq, `${where}: prev does not match the hash of sequence ${record.seq - 1}`);
        const { hash, ...rest } = record;
        if (hashOf(rest) !== hash) return broken(record.seq, `${where}: the hash does not match the content (edited)`);
        prev = hash;
        expected++;
      }
    }
    return { ok: true, eventsChecked: expected - 1, firstBrokenSequence: 0, problem: '' };
  }

  /** Waits for pending appends, then closes the file. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.writing) await new Promise((resolve) => setTimeout(resolve, 5));
    await this.file.close();
  }
}

/**
 * The text up to and including its last newline, without trailing lines of NUL bytes (where a file grew but its data
 * did not land before a crash): what follows is a torn write that was never acknowledged.
 */
function wholePrefix(text: string): string {
  let end = text.lastIndexOf('\n') + 1;
  while (end > 0) {
    const start = text.lastIndexOf('\n', end - 2) + 1;
    if (!/^\0*$/.test(text.slice(start, end - 1))) break;
    end = start;
  }
  return text.slice(0, end);
}

function lastRecord(text: string): AuditRecord | undefined {
  const trimmed = text.endsWith('\n') ? text.slice(0, -1) : text;
  return trimmed === '' ? undefined : parseLine(trimmed.slice(trimmed.lastIndexOf('\n') + 1));
}

function firstRecord(text: string): AuditRecord | undefined {
  const end = text.indexOf('\n');
  return end <= 0 ? undefined : parseLine(text.slice(0, end));
}

/** Rotated files beside the current one, oldest first. */
async function rotatedFiles(path: string): Promise<{ path: string; first: number }[]> {
  const prefix = `${basename(path)}.`;
  let names: string[];
  try {
    names = await readdir(dirname(path));
  } catch {
    return [];
  }
  return names
    .filter((name) => name.startsWith(prefix) && ROTATED_SUFFIX.test(name))
    .map((name) => ({ path: join(dirname(path), name), first: Number(ROTATED_SUFFIX.exec(name)?.[1]) }))
    .sort((a, b) => a.first - b.first);
}

/** The current file's last line is whole but not a record: edited or damaged, not torn by a crash. */
export class AuditLogDamagedError extends FailedPreconditionError {
  constructor(readonly path: string) {
    super(
      `the last line of the audit log ${path} is not an audit record; it was not cut off by a crash but changed. Keep the file as evidence, move it aside and start again`,
    );
  }
}
