import { natsServerBinary, type NatsTestServer, startNatsServer } from '@loom/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectMessaging, Lease, LEASE_BUCKET, type Messaging } from '../src/index.js';
import { testMessagingSettings } from '../src/testing.js';

const binary = natsServerBinary('messaging lease');

/** How many times the lease was taken, checking that each take follows a give-up (or is the first). */
function taken(events: readonly string[]): number {
  const takes = events.filter((event) => event.endsWith(' took'));
  events.forEach((event, index) => {
    if (index > 0 && event.endsWith(' took')) expect(events[index - 1]).toContain(' lost: ');
  });
  return takes.length;
}

/**
 * Short enough for a lean test, long enough for a loaded machine to renew in time: a renewal is due every third of it
 * and must succeed within the next third (900 ms left a stall of 300 ms to a CI machine busy with other builds).
 */
const LEASE_MS = 3000;

describe.skipIf(binary === undefined)('a lease in a JetStream key-value bucket, on a real nats-server', () => {
  let server: NatsTestServer;
  const connections: Messaging[] = [];
  const leases: Lease[] = [];
  /** Who held the lease, in the order they took it and gave it up; `holding` is how many hold it now. */
  const events: string[] = [];
  let holding = 0;
  let mostAtOnce = 0;

  async function lease(key: string, holder: string): Promise<{ lease: Lease; messaging: Messaging }> {
    const messaging = await connectMessaging(testMessagingSettings(server.url));
    connections.push(messaging);
    const bucket = await messaging.keyValue(LEASE_BUCKET, { ttlMs: LEASE_MS });
    const made = new Lease({
      bucket,
      key,
      holder,
      timeMs: LEASE_MS,
      onAcquired: () => {
        holding += 1;
        mostAtOnce = Math.max(mostAtOnce, holding);
        events.push(`${holder} took`);
      },
      onLost: (reason) => {
        holding -= 1;
        events.push(`${holder} lost: ${reason}`);
        return Promise.resolve();
      },
    });
    leases.push(made);
    made.start();
    return { lease: made, messaging };
  }

  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterEach(async () => {
    await Promise.all(leases.splice(0).map((made) => made.close()));
    await Promise.all(connections.splice(0).map((messaging) => messaging.close()));
    events.splice(0);
    holding = 0;
    mostAtOnce = 0;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('is held by exactly one of three; closing the holder hands it to another, and a second close changes nothing', async () => {
    const all = await Promise.all(['a', 'b', 'c'].map((holder) => lease('workflow.timer', holder)));
    await expect.poll(() => all.filter(({ lease: made }) => made.state === 'holding').length).toBe(1);
    const first = all.find(({ lease: made }) => made.state === 'holding')!;
    await first.lease.close();
    await first.lease.close();
    expect(first.lease.state).toBe('closed');
    await expect.poll(() => all.filter(({ lease: made }) => made.state === 'holding').length).toBe(1);
    expect(mostAtOnce).toBe(1);
    expect(events).toContain(`${['a', 'b', 'c'][all.indexOf(first)]} lost: the lease was closed`);
    expect(taken(events)).toBeGreaterThanOrEqual(2);
  });

  it('moves to the standby when the holder can no longer renew (its connection gone), never held by both', async () => {
    const a = await lease('workflow.reader', 'a');
    await expect.poll(() => a.lease.state).toBe('holding');
    const b = await lease('workflow.reader', 'b');
    // the holder's connection goes as a killed process's would: it stops before its value expires, then b takes it
    await a.messaging.close();
    await expect.poll(() => b.lease.state, { timeout: LEASE_MS * 10 }).toBe('holding');
    // a loaded machine may make a renewal late (a gives the lease up and takes it again), never two holders at once
    expect(events.slice(-2)).toEqual(['a lost: the lease was not renewed in time', 'b took']);
    expect(mostAtOnce).toBe(1);
  });

  it('leases of different keys are held side by side', async () => {
    const one = await lease('workflow.one', 'a');
    const two = await lease('workflow.two', 'a');
    await expect.poll(() => [one.lease.state, two.lease.state]).toEqual(['holding', 'holding']);
  });
});
