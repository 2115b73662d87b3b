import { withResolvers } from '@loom/foundation';
import { type MessagingSettings, sourceConsumerName, streamName } from '@loom/messaging';
import { testMessagingSettings, type TestMessagingOverrides } from '@loom/messaging/testing';
import { type NatsTestServer } from '@loom/testing';
import { connect } from 'nats';
import { type ComponentContext, type ComponentFactory, type LoomMessage, type Outcome, outcome } from '../src/runtime/component.js';

/** Messaging settings for a test server: small limits, the rest as loom's defaults. */
export const durableSettings = (server: NatsTestServer, overrides: TestMessagingOverrides = {}): MessagingSettings =>
  testMessagingSettings(server.url, overrides);

/** What JetStream holds for one source of a workflow: its stream's messages and its durable consumer's counts. */
export interface DurableState {
  /** Messages in the workflow's stream (a work queue: acknowledged and terminated ones are removed). */
  readonly stored: number;
  /** Delivered and not yet acknowledged. */
  readonly ackPending: number;
  /** Stored and not yet delivered. */
  readonly undelivered: number;
  /** Messages delivered more than once. */
  readonly redelivered: number;
  /** Deliveries made, redeliveries included. */
  readonly delivered: number;
}

/** Reads JetStream's state of a workflow's source from the server itself, over a connection of its own. */
export async function durableState(server: NatsTestServer, workflow: string, source: string): Promise<DurableState> {
  const connection = await connect({ servers: server.url });
  try {
    const manager = await connection.jetstreamManager();
    const stream = await manager.streams.info(streamName(workflow));
    const consumer = await manager.consumers.info(streamName(workflow), sourceConsumerName(source));
    return {
      stored: stream.state.messages,
      ackPending: consumer.num_ack_pending,
      undelivered: consumer.num_pending,
      redelivered: consumer.num_redelivered,
      delivered: consumer.delivered.consumer_seq,
    };
  } finally {
    await connection.close();
  }
}

/** A processor made of a function of each message (registered under some kind). */
export function processorOf(each: (message: LoomMessage, context: ComponentContext) => Outcome): ComponentFactory {
  return {
    kind: 'processor',
    create: (context) =>
      Promise.resolve({
        process: (batch: readonly LoomMessage[]) => Promise.resolve(batch.map((message) => each(message, context))),
        close: () => Promise.resolve(),
      }),
  };
}

/** Sinks that write `<component> <message id>` for each message they take, and a gate that holds them until opened. */
export function recordingSinks(): { factory: ComponentFactory; written: string[]; open(): void; closeGate(): void } {
  const written: string[] = [];
  let gate: { readonly opened: Promise<void>; readonly open: () => void } | undefined;
  const factory: ComponentFactory = {
    kind: 'processor',
    create: (context) =>
      Promise.resolve({
        async process(batch: readonly LoomMessage[], signal: AbortSignal) {
          if (gate !== undefined) {
            const aborted = new Promise<never>((_resolve, reject) => {
              if (signal.aborted) reject(new Error('the run is closing'));
              signal.addEventListener('abort', () => reject(new Error('the run is closing')), { once: true });
            });
            await Promise.race([gate.opened, aborted]);
          }
          for (const message of batch) written.push(`${context.name} ${message.id}`);
          return batch.map(() => outcome.none());
        },
        close: () => Promise.resolve(),
      }),
  };
  return {
    factory,
    written,
    open: () => {
      gate?.open();
      gate = undefined;
    },
    closeGate: () => {
      const { promise: opened, resolve: open } = withResolvers();
      gate = { opened, open };
    },
  };
}
