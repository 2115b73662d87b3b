import { natsServerBinary, type NatsTestCluster, startNatsCluster } from '@loom/testing';
import { connect } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMessaging, type Messaging, streamName } from '../src/index.js';
import { testMessagingSettings } from '../src/testing.js';

/**
 * Issue 51's cluster proof: a workflow's stream with three replicas on a 3-server NATS cluster (file storage), the server
 * leading the stream SIGKILLed while messages are published and consumed. Every acknowledged publish is delivered, and
 * publishing and consuming go on on the two servers left (a majority). Cheap by design: 2,000 small messages.
 */
const binary = natsServerBinary('messaging on a NATS cluster');

const WORKFLOW = 'Cluster run';
const SOURCE = 'in';
const MESSAGES = 2_000;
const KILL_AFTER = 600;
const text = (value: string): Uint8Array => new TextEncoder().encode(value);

describe.skipIf(binary === undefined)('messaging on a 3-server NATS cluster with three replicas', () => {
  let cluster: NatsTestCluster;
  let messaging: Messaging | undefined;

  beforeAll(async () => {
    cluster = await startNatsCluster({ binary: binary! });
  }, 120_000);
  afterAll(async () => {
    await messaging?.close();
    await cluster?.close();
  });

  it('loses no acknowledged message when the server leading the stream is SIGKILLed mid-run, and the run goes on', async () => {
    // a short ack wait: what the killed leader sent and nobody received is delivered again within seconds, not 30 s
    const overrides = { stream: { replicas: 3 }, consumer: { ackWaitMs: 3_000 } };
    const settings = { ...testMessagingSettings(cluster.servers[0]!.url, overrides), servers: cluster.urls.split(',') };
    // JetStream stores once the cluster has elected its meta leader: the first stream is made as soon as it can be
    await expect
      .poll(
        async () => {
          messaging ??= await connectMessaging(settings).catch(() => undefined);
          return messaging?.ensureWorkflowStream(WORKFLOW, [SOURCE]).then(
            () => true,
            () => false,
          );
        },
        { timeout: 60_000, interval: 250 },
      )
      .toBe(true);
    const open = messaging!;

    const delivered = new Set<string>();
    const consumer = await open.consume(WORKFLOW, SOURCE);
    const consuming = (async () => {
      for await (const delivery of consumer) {
        delivered.add(new TextDecoder().decode(delivery.payload));
        // a lost ack only brings the message again; what counts is that each acknowledged publish arrives
        await delivery.ackConfirmed().catch(() => undefined);
      }
    })();

    const leader = await streamLeader(cluster.urls);
    const victim = cluster.servers.find((server) => server.serverName === leader);
    expect(victim, `the stream's leader ${leader} is one of the cluster's servers`).toBeDefined();

    // published as a client does: each message until JetStream answers it, retried with its id after an error
    const acknowledged = new Set<string>();
    let failures = 0;
    let killed: Promise<void> | undefined;
    for (let index = 0; index < MESSAGES; index++) {
      const id = `m-${index}`;
      for (;;) {
        try {
          await open.publish(WORKFLOW, SOURCE, text(id), { messageId: id });
          acknowledged.add(id);
          break;
        } catch {
          failures += 1;
        }
      }
      if (killed === undefined && acknowledged.size >= KILL_AFTER) killed = victim!.stop({ kill: true });
    }
    await killed;
    expect(killed).toBeDefined();
    expect(victim!.running).toBe(false);
    expect(acknowledged.size).toBe(MESSAGES);

    await expect.poll(() => [...acknowledged].filter((id) => !delivered.has(id)).length, { timeout: 90_000, interval: 250 }).toBe(0);
    const newLeader = await streamLeader(cluster.urls);
    expect(newLeader).not.toBe(leader);
    console.log(
      `NATS cluster, R3: the stream's leader ${leader} SIGKILLed after ${KILL_AFTER} of ${MESSAGES} acknowledged; ` +
        `${failures} publishes failed and were sent again; all ${MESSAGES} delivered, the stream now led by ${newLeader}`,
    );
    await consumer.stop();
    await consuming;
  }, 240_000);
});

/** The server name of the workflow stream's leader, as JetStream tells it. */
async function streamLeader(urls: string): Promise<string | undefined> {
  const connection = await connect({ servers: urls.split(',') });
  try {
    const manager = await connection.jetstreamManager();
    return (await manager.streams.info(streamName(WORKFLOW))).cluster?.leader;
  } finally {
    await connection.close();
  }
}
