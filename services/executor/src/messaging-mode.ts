import { metrics } from '@opentelemetry/api';
import { type LoomConfig } from '@loom/config';
import { connectMessaging, createMessagingMetrics, type Messaging, messagingSettings } from '@loom/messaging';
import { type Logger, TELEMETRY_SCOPE } from '@loom/telemetry';

/** What an acknowledgement of a published message means in each mode, as the executor's start-up log says it. */
export const ACKNOWLEDGEMENT_MEANING = {
  'in-memory': "an acknowledged message is held in this executor's memory: it is lost if the process dies before it is processed",
  durable:
    'an acknowledged message is stored in JetStream (with the configured replicas) and processed at least once: it is acknowledged to JetStream ' +
    'only when all it led to is finished, and delivered again after a crash',
} as const;

/**
 * The executor's messaging: with `loom.messaging.nats.servers` set, one connection to NATS JetStream (durable mode),
 * its metrics (`loom.messaging.stored`, `.pending`, `.redelivered`, `.terminated` by workflow) on the process's meter;
 * without it, undefined (in-memory mode). Either way the log says which mode is on and what an acknowledgement means.
 * An unreachable server or refused credentials stop the start with a typed error.
 */
export async function openMessaging(config: Pick<LoomConfig, 'messaging'>, logger: Logger): Promise<Messaging | undefined> {
  const settings = messagingSettings(config.messaging);
  if (settings === undefined) {
    logger.info({ messaging: 'in-memory' }, `messages in memory (loom.messaging.nats.servers unset): ${ACKNOWLEDGEMENT_MEANING['in-memory']}`);
    return undefined;
  }
  // the pending gauge reads the connection the instruments are made for
  const opened: { messaging?: Messaging } = {};
  const instruments = createMessagingMetrics(metrics.getMeter(TELEMETRY_SCOPE), () => opened.messaging?.pendingByWorkflow() ?? Promise.resolve(new Map()));
  const messaging = await connectMessaging(settings, { metrics: instruments, name: 'loom-executor' });
  opened.messaging = messaging;
  const { stream, consumer } = settings;
  logger.info(
    {
      messaging: 'durable',
      servers: settings.servers.map(addressOf),
      replicas: stream.replicas,
      ackWaitMs: consumer.ackWaitMs,
      maxDeliver: consumer.maxDeliver,
      maxAckPending: consumer.maxAckPending,
    },
    `messages durable on NATS JetStream: ${ACKNOWLEDGEMENT_MEANING.durable}`,
  );
  return messaging;
}

/** A server URL without any user or password it may carry. */
function addressOf(server: string): string {
  try {
    const url = new URL(server);
    return `${url.protocol}//${url.host}`;
  } catch {
    return '(a server address)';
  }
}
