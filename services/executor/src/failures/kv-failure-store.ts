import { jetStreamToken, type KV, type Messaging } from '@loom/messaging';
import { type FailureStore, merged, type PutOutcome, type StoredFailure } from './failure-store.js';

/** Options of the JetStream store. */
export interface KvFailureStoreOptions {
  /** Most bytes per workflow's bucket (loom.executor.failures.maxBytes). */
  readonly maxBytes: number;
  /** loom.executor.failures.maxAgeMs; 0: no limit. */
  readonly maxAgeMs: number;
}

/** A failed JetStream write that means the bucket is full (its stream discards new messages past max_bytes). */
const FULL = /maximum (bytes|messages)/;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The key-value bucket of a workflow's failed messages (`LOOM_FAILURES_<workflow>`). */
export function failureBucketName(workflow: string): string {
  return `LOOM_FAILURES_${jetStreamToken(workflow)}`;
}

/**
 * The failure store of durable mode: per workflow a JetStream key-value bucket (a stream, `KV_LOOM_FAILURES_<workflow>`,
 * replicated as loom.messaging.stream.replicas), a record per key (its id), written before the failed delivery is
 * terminated, shared by every executor. The bucket's max_bytes is loom.executor.failures.maxBytes (a put past it is
 * refused: 'full') and its max_age loom.executor.failures.maxAgeMs (a record goes that long after its last failure).
 */
export class KvFailureStore implements FailureStore {
  private readonly buckets = new Map<string, Promise<KV>>();

  constructor(
    private readonly messaging: Messaging,
    private readonly options: KvFailureStoreOptions,
  ) {}

  put(record: StoredFailure): Promise<PutOutcome> {
    return this.putMany([record]).then((outcomes) => outcomes[0] ?? 'kept');
  }

  /**
   * A message's first failure, the common case, is a create (one write, all a batch's in one turn); one whose key is
   * kept already (a retried message failing again) or marked deleted is read, merged and written.
   */
  async putMany(records: readonly StoredFailure[]): Promise<PutOutcome[]> {
    const workflow = records[0]?.workflow;
    if (workflow === undefined) return [];
    // a run keeps one workflow's failures; records of several workflows are kept per workflow
    if (records.some((record) => record.workflow !== workflow)) return Promise.all(records.map((record) => this.put(record)));
    const bucket = await this.bucket(workflow);
    const created = await this.messaging.createKeys(
      failureBucketName(workflow),
      records.map((record) => ({ key: record.id, value: encoder.encode(JSON.stringify(record)) })),
    );
    return Promise.all(
      created.map((outcome, index) =>
        outcome === 'exists' ? this.putMerged(bucket, records[index] as StoredFailure) : Promise.resolve<PutOutcome>(outcome === 'created' ? 'kept' : 'full'),
      ),
    );
  }

  /** Merges a record with the one its key holds (none for a delete marker) and writes it over. */
  private async putMerged(bucket: KV, record: StoredFailure): Promise<PutOutcome> {
    const earlier = await bucket.get(record.id);
    const kept = merged(earlier === null || earlier.operation !== 'PUT' ? undefined : recordOf(earlier.value), record);
    try {
      await bucket.put(record.id, encoder.encode(JSON.stringify(kept)));
    } catch (error) {
      if (error instanceof Error && FULL.test(error.message)) return 'full';
      throw error;
    }
    return 'kept';
  }

  async list(workflow: string): Promise<StoredFailure[]> {
    const bucket = await this.bucket(workflow);
    const records: StoredFailure[] = [];
    let initialized!: () => void;
    const done = new Promise<void>((resolve) => (initialized = resolve));
    const entries = await bucket.watch({ ignoreDeletes: true, initializedFn: () => initialized() });
    const reading = (async () => {
      for await (const entry of entries) if (entry.operation === 'PUT') records.push(recordOf(entry.value));
    })();
    await done;
    entries.stop();
    await reading;
    // a key written twice while the watch started: the later value only
    return [...new Map(records.map((record) => [record.id, record])).values()];
  }

  async get(workflow: string, id: string): Promise<StoredFailure | undefined> {
    const entry = await (await this.bucket(workflow)).get(id);
    return entry === null || entry.operation !== 'PUT' ? undefined : recordOf(entry.value);
  }

  async remove(workflow: string, ids: readonly string[]): Promise<number> {
    const bucket = await this.bucket(workflow);
    let removed = 0;
    for (const id of new Set(ids)) {
      const entry = await bucket.get(id);
      if (entry === null || entry.operation !== 'PUT') continue;
      await bucket.purge(id);
      removed++;
    }
    return removed;
  }

  close(): Promise<void> {
    this.buckets.clear();
    return Promise.resolve();
  }

  private bucket(workflow: string): Promise<KV> {
    let bucket = this.buckets.get(workflow);
    if (bucket === undefined) {
      bucket = this.messaging.keyValue(failureBucketName(workflow), {
        maxBytes: this.options.maxBytes,
        ...(this.options.maxAgeMs > 0 ? { ttlMs: this.options.maxAgeMs } : {}),
      });
      this.buckets.set(workflow, bucket);
      bucket.catch(() => this.buckets.delete(workflow));
    }
    return bucket;
  }
}

function recordOf(value: Uint8Array): StoredFailure {
  return JSON.parse(decoder.decode(value)) as StoredFailure;
}
