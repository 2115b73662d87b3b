// The options of the NATS connectors (the NATS Subscriber source and the NATS Publisher sink), kept beside the catalog
// that lists them. Their secrets (token, credentials, TLS key) are $$VARIABLEs sealed at push (SECRET_OPTIONS).

import { concurrencyOption, failureHandlingOptions, option, type OptionSpec } from './catalog-options.js';

/** Where a new durable consumer of the NATS Subscriber starts in its stream: JetStream's deliver policies. */
export const NATS_DELIVER_POLICIES = ['all', 'new', 'last', 'last_per_subject'] as const;

/** What the NATS Subscriber does with a payload that is not a JSON object: wrap it as `{ data: <text> }`, or refuse it. */
export const NATS_NON_JSON_HANDLING = ['wrap', 'refuse'] as const;

/** The secret options of both NATS connectors: each a $$VARIABLE, resolved and sealed at push. */
export const NATS_SECRET_OPTIONS = ['token', 'credentials', 'tls_key'] as const;

const SERVERS = {
  regex: /^\s*(?:nats|tls):\/\/[^\s,]+(?:\s*,\s*(?:nats|tls):\/\/[^\s,]+)*\s*$/,
  description: 'comma-separated nats:// or tls:// URLs',
};
const NAME = { regex: /^[A-Za-z0-9_-]{1,255}$/, description: 'a JetStream name (letters, digits, _ and -)' };
const SUBSCRIPTION_SUBJECT = {
  regex: /^(?:(?:[^\s.*>]+|\*)(?:\.(?:[^\s.*>]+|\*))*(?:\.>)?|>)$/,
  description: 'a NATS subject: dot-separated tokens, * for one token, > last for the rest',
};
const PUBLISH_SUBJECT = {
  regex: /^(?:[^\s.*>{}]|\{[^{}]+\})+(?:\.(?:[^\s.*>{}]|\{[^{}]+\})+)*$/,
  description: 'a NATS subject without wildcards: dot-separated tokens, each may hold {field} placeholders',
};

/** How both connectors reach NATS: servers and the credentials and TLS (secrets as $$VARIABLEs). */
function connectionOptions(): OptionSpec[] {
  return [
    option('Main', 'servers', 'STRING', 'NATS servers (comma-separated nats:// or tls:// URLs)', true, 'nats://127.0.0.1:4222', { pattern: SERVERS }),
    option('Security', 'token', 'STRING', 'Token ($$VARIABLE)', false, null),
    option('Security', 'credentials', 'STRING', 'Credentials: the content of a .creds file ($$VARIABLE)', false, null),
    option('Security', 'tls_ca', 'TEXT', 'TLS: PEM CA certificates of the servers', false, null),
    option('Security', 'tls_cert', 'TEXT', 'TLS: PEM client certificate', false, null),
    option('Security', 'tls_key', 'STRING', "TLS: the client certificate's PEM key ($$VARIABLE)", false, null),
  ];
}

/** The NATS Subscriber's options: a core subject (optional queue group) or, with `stream`, a JetStream durable consumer. */
export function natsSubscriberOptions(): OptionSpec[] {
  return [
    ...connectionOptions(),
    option('Main', 'subject', 'STRING', 'Subject (wildcards * and > allowed)', true, null, { pattern: SUBSCRIPTION_SUBJECT }),
    option('Main', 'stream', 'STRING', 'JetStream stream (unset: a core subject, at most once)', false, null, { pattern: NAME }),
    option('Main', 'durable_name', 'STRING', 'Durable consumer name (JetStream; default loom_<component>)', false, null, { pattern: NAME }),
    option('Advanced', 'deliver_policy', 'STRING', 'Where a new durable consumer starts', false, 'all', { allowedValues: NATS_DELIVER_POLICIES }),
    option('Advanced', 'queue_group', 'STRING', 'Queue group (core subject only)', false, null),
    option('Advanced', 'non_json', 'STRING', 'A payload that is not a JSON object: wrap as { data } or refuse', false, 'wrap', {
      allowedValues: NATS_NON_JSON_HANDLING,
    }),
    option('Advanced', 'ack_wait', 'INTEGER', 'Ack wait (ms): unacknowledged longer, delivered again (JetStream)', false, 30_000),
    option('Advanced', 'max_deliver', 'INTEGER', 'Deliveries of a message at most (JetStream)', false, 5),
    option('Advanced', 'max_ack_pending', 'INTEGER', 'Unacknowledged messages at most (JetStream)', false, 256),
  ];
}

/** The NATS Publisher's options: the subject (a template over body fields) and whether to wait for JetStream's ack. */
export function natsPublisherOptions(): OptionSpec[] {
  return [
    ...connectionOptions(),
    option('Main', 'subject', 'STRING', 'Subject ({field} placeholders take body fields)', true, null, { pattern: PUBLISH_SUBJECT }),
    option('Main', 'jetstream', 'BOOLEAN', "Wait for JetStream's acknowledgement (false: only when a stream takes the subject)", false, false),
    ...failureHandlingOptions(),
    concurrencyOption(),
  ];
}
