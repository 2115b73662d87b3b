import { setTimeout as sleep } from 'node:timers/promises';
import { type JetStreamClient, type MsgHdrs, type PubAck } from 'nats';
import { isNoResponders } from './nats-errors.js';

/**
 * How often a publish answered "no responders" is tried, and how long apart. A server that has just restarted, or a
 * client that has just reconnected, can answer it for a moment before JetStream has its streams back; the Go and .NET
 * clients retry it the same way. Past these tries it is what it says: no stream takes the subject. Nothing is stored
 * by a publish nobody answered, so trying again stores the message at most once (and its id, when it has one, guards
 * the rest).
 */
export const NO_RESPONDERS_TRIES = 8;
export const NO_RESPONDERS_DELAY_MS = 250;

/** `attempt` again while it fails with "no responders", `tries` times in all, `delayMs` apart; its result, or its last error. */
export async function retryingNoResponders<T>(attempt: () => Promise<T>, tries = NO_RESPONDERS_TRIES, delayMs = NO_RESPONDERS_DELAY_MS): Promise<T> {
  for (let tried = 1; ; tried++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isNoResponders(error) || tried >= tries) throw error;
      await sleep(delayMs);
    }
  }
}

/** Publishes to a subject a JetStream stream takes and answers JetStream's acknowledgement once it is stored. */
export function publishToJetStream(
  client: JetStreamClient,
  subject: string,
  payload: Uint8Array,
  headers: MsgHdrs,
  messageId: string | undefined,
): Promise<PubAck> {
  return retryingNoResponders(() => client.publish(subject, payload, { headers, ...(messageId === undefined ? {} : { msgID: messageId }) }));
}
