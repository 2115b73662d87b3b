import { z } from 'zod';
import { messagingKeys } from './messaging-keys.js';
import {
  base64Key,
  boolean,
  decimal,
  hostPort,
  httpUrl,
  integer,
  jsonObject,
  listOf,
  nonEmptyString,
  oneOf,
  optional,
  postgresUrl,
  token,
} from './value-schemas.js';

/** The six loom services, by the names used in `loom.services.<name>.address` and identities. */
export const serviceNames = ['config-store', 'scheduler', 'executor', 'secrets', 'skill-gateway', 'audit'] as const;

/** The name of one loom service. */
export type ServiceName = (typeof serviceNames)[number];

/** The roles of people calling loom's API (see the permission table in libs/service-kit). */
export const loomRoles = ['viewer', 'editor', 'operator', 'admin'] as const;

/** One of loom's roles. */
export type LoomRole = (typeof loomRoles)[number];

/** What the scheduler does when a new version of a running workflow is pushed: restart it, or keep the old run. */
export const updatePolicies = ['restart', 'keep'] as const;

/** A value of `loom.scheduler.update.default` and `loom.scheduler.update.workflows.<name>`. */
export type UpdatePolicy = (typeof updatePolicies)[number];

/** Log levels accepted by `loom.log.level`. */
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A level accepted by `loom.log.level`. */
export type LogLevel = (typeof logLevels)[number];

/** Returns the environment variable for a key (Spring relaxed binding): 'server.port' -> 'SERVER_PORT'. */
export function envVarFor(key: string): string {
  return key.toUpperCase().replaceAll('.', '_').replaceAll('-', '');
}

/** How the value of a key is validated and documented. */
export interface ValueSpec<T> {
  readonly key: string;
  readonly description: string;
  /** The default as documented, when it is not a plain value (derived, or "none"). */
  readonly defaultText?: string;
  readonly schema: z.ZodType<T, unknown>;
  /** What a valid value looks like, completing "expected ...". */
  readonly expected: string;
  /** A secret value is never repeated in an error message. */
  readonly secret?: boolean;
}

/** How one key with a fixed name is validated, documented and defaulted. */
export interface KeySpec<T> extends ValueSpec<T> {
  /** The built-in (production) value. */
  readonly default: T;
  /** An environment variable of another convention read when the key is set nowhere (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
  readonly fallbackVariable?: string;
}

/** The OpenTelemetry SDKs' own variable for the OTLP endpoint. */
const OTEL_ENDPOINT_VARIABLE = 'OTEL_EXPORTER_OTLP_ENDPOINT';

/** A key's spec before its name is added from the table (where it is written once, as the property name). */
type Unnamed<S> = Omit<S, 'key'>;

function spec<T>(keySpec: Unnamed<KeySpec<T>>): Unnamed<KeySpec<T>> {
  return keySpec;
}

/** The table with each spec given its property name as its key. */
function named<const Table extends Record<string, Unnamed<KeySpec<unknown>>>>(table: Table): { readonly [K in keyof Table]: Table[K] & { readonly key: K } } {
  return Object.fromEntries(Object.entries(table).map(([key, keySpec]) => [key, { ...keySpec, key }])) as {
    readonly [K in keyof Table]: Table[K] & { readonly key: K };
  };
}

/** Where a key without a value of its own takes it from: a place inside `loom.data.directory`, or another key's value. */
export type Derivation = { readonly inside: string } | { readonly sameAs: string };

/** A key whose default follows from other keys, so the configuration always has a value for it. */
export interface DerivedKeySpec<T> extends KeySpec<T | undefined> {
  readonly derived: Derivation;
}

function derivedSpec<T>(keySpec: Omit<DerivedKeySpec<T>, 'key' | 'default' | 'defaultText'>): Unnamed<DerivedKeySpec<T>> {
  const { derived } = keySpec;
  const defaultText = 'inside' in derived ? `<loom.data.directory>/${derived.inside}` : `same as ${derived.sameAs}`;
  return { ...keySpec, default: undefined, defaultText };
}

/** Whether a key's default follows from other keys. */
export function isDerived(keySpec: KeySpec<unknown>): keySpec is DerivedKeySpec<unknown> {
  return 'derived' in keySpec;
}

const PORT = 'an integer from 0 to 65535';
const ROLE_LIST = `a comma-separated list of ${loomRoles.join(', ')}`;

/** Every key with a fixed name, by that name. */
export const fixedKeys = named({
  'server.port': spec({
    description: 'gRPC port of this process (0 picks a free port)',
    default: 8100,
    schema: integer(0, 65535),
    expected: PORT,
  }),
  'server.host': spec({
    description: 'address the gRPC server binds to',
    default: '127.0.0.1',
    schema: nonEmptyString(),
    expected: 'a non-empty bind address',
  }),
  'server.shutdown.deadlineMs': spec({
    description: 'how long a graceful shutdown may drain in-flight work before it is forced, in ms',
    default: 10000,
    schema: integer(0),
    expected: 'an integer >= 0 (milliseconds)',
  }),
  'loom.data.directory': spec({
    description: "directory of loom's own state: every state path below defaults to a place inside it (one volume holds it all)",
    default: './.loom',
    schema: nonEmptyString(),
    expected: 'a non-empty directory path',
  }),
  'loom.datasource.filesystemRoot': derivedSpec({
    description: 'directory where workflow configurations are stored',
    derived: { inside: 'workflows' },
    schema: nonEmptyString().optional(),
    expected: 'a non-empty directory path',
  }),
  'loom.datasource.history.keep': spec({
    description:
      'versions of each workflow the config store keeps (under `.history` in the filesystem root) for `loom workflow history`, `diff` and `rollback`; older ones are pruned at the next push',
    default: 50,
    schema: integer(1, 100_000),
    expected: 'an integer from 1 to 100000',
  }),
  'loom.startup.workflows.directory': derivedSpec({
    description: 'directory from which workflows are loaded at start-up',
    derived: { sameAs: 'loom.datasource.filesystemRoot' },
    schema: optional(nonEmptyString()),
    expected: 'a non-empty directory path',
  }),
  'loom.security.audit.enabled': spec({
    description: 'audit logging on',
    default: true,
    schema: boolean(),
    expected: 'true or false',
  }),
  'loom.security.audit.log.path': derivedSpec({
    description: 'audit log file',
    derived: { inside: 'audit.log' },
    schema: nonEmptyString().optional(),
    expected: 'a non-empty file path',
  }),
  'loom.security.audit.log.maxBytes': spec({
    description: 'size at which the audit log file is rotated (the hash chain continues in the next file)',
    default: 64 * 1024 * 1024,
    schema: integer(4096, Number.MAX_SAFE_INTEGER),
    expected: 'a number of bytes, at least 4096',
  }),
  'loom.security.serverPolicy.enabled': spec({
    description: 'script components run under the restrictive policy',
    default: true,
    schema: boolean(),
    expected: 'true or false',
  }),
  'loom.experimental.enabled': spec({
    description: 'security-sensitive (script) components are available',
    default: false,
    schema: boolean(),
    expected: 'true or false',
  }),
  'loom.scripts.timeLimitMs': spec({
    description: 'time one message may take in a script component (Python or JavaScript), in ms',
    default: 1000,
    schema: integer(10, 600_000),
    expected: 'an integer from 10 to 600000',
  }),
  'loom.scripts.javascript.memoryLimitMb': spec({
    description: 'heap of each JavaScript script component (its isolate), in MB',
    default: 64,
    schema: integer(8, 4096),
    expected: 'an integer from 8 to 4096',
  }),
  'loom.scripts.python.memoryLimitMb': spec({
    description: 'memory of each Python script component (its interpreter, WebAssembly memory), in MB',
    default: 256,
    schema: integer(64, 4096),
    expected: 'an integer from 64 to 4096',
  }),
  'loom.scripts.python.warmInterpreters': spec({
    description:
      'fresh Python interpreters kept ready as memory snapshots (about 20 MB each; made in the background from when the executor starts, with loom.experimental.enabled), the Python components of a workflow then start in about 0.8 s instead of 2.6 s (measured on an idle 2-core machine); 0: every host starts its interpreter from scratch',
    default: 2,
    schema: integer(0, 16),
    expected: 'an integer from 0 to 16',
  }),
  'loom.executor.queueCapacity': spec({
    description: "messages each link (a component's input queue) holds before the component upstream waits",
    default: 1024,
    schema: integer(1, 1_000_000),
    expected: 'an integer from 1 to 1000000',
  }),
  'loom.executor.id': spec({
    description: 'name of this executor among the executors sharing workflows (durable mode), as workflow status shows it; unique per executor',
    default: undefined,
    defaultText: '<host name>-<process id>',
    schema: optional(nonEmptyString()),
    expected: 'a non-empty name',
  }),
  'loom.executor.messageTrace.maxMessages': spec({
    description:
      'most messages per workflow whose events (components passed, outputs, failed attempts, failures, retries) this executor keeps in memory for `loom message trace`; the oldest go first; 0: none kept',
    default: 10_000,
    schema: integer(0, 1_000_000),
    expected: 'an integer from 0 to 1000000',
  }),
  'loom.executor.messageTrace.retentionMs': spec({
    description: 'how long, in ms from its first event, this executor keeps the events of a message for `loom message trace`',
    default: 3_600_000,
    schema: integer(1000, Number.MAX_SAFE_INTEGER),
    expected: 'an integer of at least 1000 (milliseconds)',
  }),
  'loom.executor.messageTrace.peerTimeoutMs': spec({
    description:
      'durable mode: how long, in ms, `loom message trace` waits for each other executor the status board shows to answer with its events of the message (one that does not is named as unanswered)',
    default: 5_000,
    schema: integer(100, 600_000),
    expected: 'an integer from 100 to 600000 (milliseconds)',
  }),
  'loom.executor.failures.directory': derivedSpec({
    description:
      'directory of the failure store in memory mode (without loom.messaging.nats.servers): one append-only file per workflow of the messages that failed for good, kept across restarts',
    derived: { inside: 'failures' },
    schema: nonEmptyString().optional(),
    expected: 'a directory path',
  }),
  'loom.executor.failures.maxBytes': spec({
    description:
      "most bytes of failed messages the failure store keeps per workflow (a JetStream stream's max_bytes in durable mode, the live records of its file in memory mode); when full, a new failure is refused to the store (logged, counted in loom.failures.refused) and its message settled as before the store existed",
    default: 268_435_456,
    schema: integer(1024, Number.MAX_SAFE_INTEGER),
    expected: 'an integer of at least 1024 (bytes)',
  }),
  'loom.executor.failures.maxAgeMs': spec({
    description: 'how long the failure store keeps a failed message, in ms, from its last failure (0: until retried or discarded)',
    default: 1_209_600_000,
    schema: integer(0, Number.MAX_SAFE_INTEGER),
    expected: 'an integer of at least 0 (milliseconds)',
  }),
  'loom.executor.failures.syncIntervalMs': spec({
    description:
      "memory mode: most ms between the failure store's write of a failed message and its fsync (0: fsync'd before the message counts as failed); the write itself always comes first, so a crash of loom loses nothing kept, a machine's power loss at most this interval's records (JetStream's sync_interval is the same trade, 2 minutes by default)",
    default: 1_000,
    schema: integer(0, 3_600_000),
    expected: 'an integer from 0 to 3600000 (milliseconds)',
  }),
  ...messagingKeys,
  'loom.secrets.database.url': spec({
    description: 'Postgres URL for ecosystem_variable',
    default: undefined,
    defaultText: 'none (embedded PGlite)',
    schema: optional(postgresUrl()),
    expected: 'a postgres:// or postgresql:// URL',
    secret: true,
  }),
  'loom.secrets.activeKeyId': spec({
    description: 'id of the key-ring key that encrypts new values; must be one of loom.secrets.keys',
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a key id',
  }),
  'loom.secrets.keyRingFile': derivedSpec({
    description: 'file (mode 0600) holding keys generated in development and by RotateKey without a key id',
    derived: { inside: 'keyring.json' },
    schema: nonEmptyString().optional(),
    expected: 'a file path',
  }),
  'loom.secrets.generateKeys': spec({
    description:
      'with no key configured, generate one into loom.secrets.keyRingFile, and let RotateKey without a key id generate one (development only: production configures loom.secrets.keys)',
    default: false,
    schema: boolean(),
    expected: 'true or false',
  }),
  'loom.embedded.postgres.dataDir': derivedSpec({
    description: 'data directory of the embedded PostgreSQL (PGlite) used when no database URL is configured',
    derived: { inside: 'pgdata' },
    schema: nonEmptyString().optional(),
    expected: 'a directory path',
  }),
  'loom.embedded.postgres.port': spec({
    description: 'loopback port of the embedded PostgreSQL (0: any free port, logged and shown by `loom health`)',
    default: 0,
    schema: integer(0, 65535),
    expected: PORT,
  }),
  'loom.embedded.graph.dataDir': derivedSpec({
    description: 'data directory of the embedded graph (PGlite with Apache AGE), started by the executor for AGE resources whose host is `embedded`',
    derived: { inside: 'graphdata' },
    schema: nonEmptyString().optional(),
    expected: 'a directory path',
  }),
  'loom.embedded.graph.port': spec({
    description:
      'loopback port of the embedded graph (0: the port of its last start on this data directory, kept there, or any free port the first time or when that one is taken; shown by `loom health`)',
    default: 0,
    schema: integer(0, 65535),
    expected: PORT,
  }),
  'loom.auth.allowAnonymous': spec({
    description: 'calls without a token are accepted for unrestricted RPCs',
    default: false,
    schema: boolean(),
    expected: 'true or false',
  }),
  'loom.auth.anonymousRoles': spec({
    description: 'roles of a call without credentials when loom.auth.allowAnonymous is true',
    default: [...loomRoles],
    schema: listOf(loomRoles),
    expected: ROLE_LIST,
  }),
  'loom.auth.oidc.configFile': spec({
    description: "the identity provider's installation configuration (OIDC client JSON) for signing in to loom's API; unset: no sign-in",
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a file path',
  }),
  'loom.auth.oidc.rolePrefix': spec({
    description: "prefix of the identity provider's roles that are loom roles (`loom_editor` gives editor), compared case-insensitively",
    default: 'loom_',
    schema: nonEmptyString(),
    expected: 'a non-empty prefix',
  }),
  'loom.console.port': spec({
    description: 'HTTP port of the web console, which `loom serve` runs beside the services when set (0 picks a free port); unset: no console',
    default: undefined,
    defaultText: 'none (the console is off)',
    schema: optional(integer(0, 65535)),
    expected: PORT,
  }),
  'loom.console.host': spec({
    description: 'address the web console binds to',
    default: '127.0.0.1',
    schema: nonEmptyString(),
    expected: 'a non-empty bind address',
  }),
  'loom.console.publicUrl': spec({
    description:
      "the console's address as browsers reach it (behind a proxy or ingress): the identity provider's redirect address is its `/auth/callback`, and an https address makes the session cookie Secure",
    default: undefined,
    defaultText: 'none (http://<loom.console.host>:<port>)',
    schema: optional(httpUrl()),
    expected: 'an http:// or https:// URL',
  }),
  'loom.console.session.idleTimeoutMs': spec({
    description: 'a console session unused this long ends, in ms (the user signs in again)',
    default: 1_800_000,
    schema: integer(1000),
    expected: 'an integer >= 1000 (milliseconds)',
  }),
  'loom.console.session.maxAgeMs': spec({
    description: 'a console session ends this long after its sign-in however much it is used, in ms',
    default: 43_200_000,
    schema: integer(1000),
    expected: 'an integer >= 1000 (milliseconds)',
  }),
  'loom.console.maxBodyBytes': spec({
    description: 'largest request body the console accepts; a larger one is answered 413',
    default: 65_536,
    schema: integer(1024, 16 * 1024 * 1024),
    expected: 'an integer from 1024 to 16777216',
  }),
  'loom.console.staticDirectory': spec({
    description: "directory of the console's built pages (index.html and its assets)",
    default: undefined,
    defaultText: 'the pages built with @loom/console (services/console/dist/web)',
    schema: optional(nonEmptyString()),
    expected: 'a directory path',
  }),
  'loom.graph.sso.providerConfigFile': spec({
    description: "the graph database's identity-provider installation configuration (its conf/ file); unset: no single sign-on queries",
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a file path',
  }),
  'loom.graph.sso.uri': spec({
    description: 'Bolt URI of the graph database that single sign-on queries run on',
    default: undefined,
    defaultText: 'none',
    schema: optional(z.url({ protocol: /^(bolt|neo4j)(\+s|\+ssc)?$/ })),
    expected: 'a bolt://, bolt+s://, neo4j:// or neo4j+s:// URI',
  }),
  'loom.graph.sso.mode': spec<'impersonate' | 'bearer'>({
    description:
      "how a query runs as its user: `impersonate` (the service account impersonates the token's user) or `bearer` (the token is passed to a database configured for OIDC)",
    default: 'impersonate',
    schema: oneOf(['impersonate', 'bearer'] as const),
    expected: 'impersonate or bearer',
  }),
  'loom.graph.sso.user': spec({
    description: 'service account that impersonates users (mode impersonate; needs the IMPERSONATE privilege)',
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a user name',
  }),
  'loom.graph.sso.password': spec({
    description: 'password of loom.graph.sso.user',
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a password',
    secret: true,
  }),
  'loom.graph.sso.database': spec({
    description: "database single sign-on queries run in (unset: the user's home database)",
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a database name',
  }),
  'loom.tls.certFile': spec({
    description: 'PEM certificate of this process (set all three TLS files or none)',
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a file path',
  }),
  'loom.tls.keyFile': spec({
    description: 'PEM private key of this process (set all three TLS files or none)',
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a file path',
  }),
  'loom.tls.caFile': spec({
    description: 'PEM CA that signs peer certificates (set all three TLS files or none)',
    default: undefined,
    defaultText: 'none',
    schema: optional(nonEmptyString()),
    expected: 'a file path',
  }),
  'loom.telemetry.serviceName': spec({
    description: 'service.name of traces and metrics',
    default: 'loom',
    schema: nonEmptyString(),
    expected: 'a non-empty string',
  }),
  'loom.telemetry.otlp.endpoint': spec({
    description: 'OTLP endpoint for traces and metrics',
    default: undefined,
    defaultText: `none (${OTEL_ENDPOINT_VARIABLE} if set)`,
    fallbackVariable: OTEL_ENDPOINT_VARIABLE,
    schema: optional(httpUrl()),
    expected: 'an http:// or https:// URL',
  }),
  'loom.telemetry.prometheus.port': spec({
    description: 'port of the Prometheus metrics endpoint (0 turns it off)',
    default: 9464,
    schema: integer(0, 65535),
    expected: PORT,
  }),
  'loom.telemetry.sampling.ratio': spec({
    description: 'share of traces sampled',
    default: 1,
    schema: decimal(0, 1),
    expected: 'a number from 0 to 1',
  }),
  'loom.telemetry.messages.sampling.ratio': spec({
    description: 'share of the messages a workflow source makes that get a span per component (of runs that are sampled)',
    default: 0.01,
    schema: decimal(0, 1),
    expected: 'a number from 0 to 1',
  }),
  'loom.scheduler.database.url': spec({
    description: 'PostgreSQL URL for the scheduler state (fires, pauses, lease); set it to run several schedulers, one leading',
    default: undefined,
    defaultText: 'none (one scheduler, state in loom.scheduler.stateFile)',
    schema: optional(postgresUrl()),
    expected: 'a postgres:// or postgresql:// URL',
    secret: true,
  }),
  'loom.scheduler.stateFile': derivedSpec({
    description: 'file of the scheduler state (last fire times, pauses) when no loom.scheduler.database.url is set',
    derived: { inside: 'scheduler-state.json' },
    schema: nonEmptyString().optional(),
    expected: 'a file path',
  }),
  'loom.scheduler.lease.pollMs': spec({
    description: 'how often a standby scheduler tries to take the lease, and the leader checks it still holds it, in ms',
    default: 1000,
    schema: integer(50, 60_000),
    expected: 'an integer from 50 to 60000',
  }),
  'loom.scheduler.lease.timeoutMs': spec({
    description: 'a leader that cannot confirm its lease session for this long steps down; the database ends a lease session idle this long',
    default: 10_000,
    schema: integer(1000, 600_000),
    expected: 'an integer from 1000 to 600000',
  }),
  'loom.scheduler.restart.initialDelayMs': spec({
    description: 'delay before the first restart of an autoStart workflow that failed; doubles with each attempt (with jitter)',
    default: 1000,
    schema: integer(1, 3_600_000),
    expected: 'an integer from 1 to 3600000',
  }),
  'loom.scheduler.restart.maxDelayMs': spec({
    description: 'longest delay between restarts of a failed autoStart workflow',
    default: 300_000,
    schema: integer(1, 86_400_000),
    expected: 'an integer from 1 to 86400000',
  }),
  'loom.scheduler.catchUp.maxFires': spec({
    description: 'most missed fires one schedule with catchUp ALL makes up for at start (the latest ones; the rest are logged)',
    default: 1000,
    schema: integer(1, 100_000),
    expected: 'an integer from 1 to 100000',
  }),
  'loom.scheduler.update.default': spec<UpdatePolicy>({
    description: 'when a new version of a running workflow is pushed: restart it, or keep the old run until its next start',
    default: 'restart',
    schema: oneOf(updatePolicies),
    expected: `one of ${updatePolicies.join(', ')}`,
  }),
  'loom.log.level': spec<LogLevel>({
    description: 'lowest level written to the log',
    default: 'info',
    schema: oneOf(logLevels),
    expected: `one of ${logLevels.join(', ')}`,
  }),
  'loom.skills.database.url': spec({
    description: 'PostgreSQL URL of the skill registry (table skill_registration), shared by every gateway that uses it',
    default: undefined,
    defaultText: 'embedded (the embedded PostgreSQL of loom.embedded.postgres.*)',
    schema: optional(postgresUrl()),
    expected: 'a postgres:// or postgresql:// URL',
    secret: true,
  }),
  'loom.skills.timeoutMs': spec({
    description: 'time one attempt of a skill call may take, in ms (per skill: loom.skills.timeouts.<name>)',
    default: 30_000,
    schema: integer(1, 3_600_000),
    expected: 'an integer from 1 to 3600000',
  }),
  'loom.skills.maxConcurrency': spec({
    description: 'calls under way at once to one skill from one gateway, keyword extraction skills aside (per skill: loom.skills.concurrency.<name>)',
    default: 64,
    schema: integer(1, 10_000),
    expected: 'an integer from 1 to 10000',
  }),
  'loom.skills.keywordExtraction.maxConcurrency': spec({
    description: "calls under way at once to one keyword extraction skill (its server's max-connections)",
    default: 100,
    schema: integer(1, 10_000),
    expected: 'an integer from 1 to 10000',
  }),
  'loom.skills.inProcess': spec({
    description:
      'call skills served by this process (loom serve --with-skills) in memory, through their limits, checks and spans, instead of over loopback HTTP',
    default: true,
    schema: boolean(),
    expected: 'true or false',
  }),
  'loom.skills.retries': spec({
    description: 'attempts after the first on connection errors, time-outs, 429 and 5xx (never on other 4xx)',
    default: 2,
    schema: integer(0, 10),
    expected: 'an integer from 0 to 10',
  }),
  'loom.skills.backoff.initialMs': spec({
    description: 'delay before the first retry of a skill call; doubles with each retry, less a random 0-50 % (jitter)',
    default: 100,
    schema: integer(1, 60_000),
    expected: 'an integer from 1 to 60000',
  }),
  'loom.skills.backoff.maxMs': spec({
    description: 'longest delay between retries of a skill call (a Retry-After up to this long is honoured)',
    default: 2000,
    schema: integer(1, 600_000),
    expected: 'an integer from 1 to 600000',
  }),
  'loom.skills.breaker.failureThreshold': spec({
    description: "consecutive failed attempts that open a skill's circuit (calls then fail at once with UNAVAILABLE)",
    default: 5,
    schema: integer(1, 1000),
    expected: 'an integer from 1 to 1000',
  }),
  'loom.skills.breaker.openMs': spec({
    description: 'how long an open circuit stays open before one probe call is let through (half-open)',
    default: 5000,
    schema: integer(1, 3_600_000),
    expected: 'an integer from 1 to 3600000',
  }),
  'loom.skills.registry.cacheMs': spec({
    description: 'how long a gateway reuses a registered skill it read for calls; registrations made through another gateway show after this long',
    default: 1000,
    schema: integer(0, 600_000),
    expected: 'an integer from 0 to 600000',
  }),
});

/** The name of a key with a fixed name. */
export type FixedKey = keyof typeof fixedKeys;

/** The key for where a service is reached. */
export function serviceAddressKey(service: ServiceName): string {
  return `loom.services.${service}.address`;
}

/** How `loom.services.<name>.address` is validated. */
export const serviceAddressSpec: KeySpec<string | undefined> = {
  key: 'loom.services.<name>.address',
  description: `where a service is reached, <name> one of ${serviceNames.join(', ')}`,
  default: undefined,
  defaultText: 'this process',
  schema: optional(hostPort()),
  expected: 'host:port',
};

/** A family of keys `<name>.<entry>` that together form a map from entry to value. */
export interface MapKeySpec<T = unknown> extends ValueSpec<T> {
  /** `<name>.`: what every key of the family starts with. */
  readonly prefix: string;
}

/** A family's spec before its name is added from the table: `placeholder` names an entry in the docs (`<id>`). */
interface UnnamedFamily<T> extends Omit<MapKeySpec<T>, 'prefix' | 'key'> {
  readonly placeholder: string;
}

function family<T>(placeholder: string, fields: Omit<MapKeySpec<T>, 'prefix' | 'key'>): UnnamedFamily<T> {
  return { ...fields, placeholder };
}

/** A table of unnamed families, each spec named. */
type NamedFamilies<Table> = { readonly [K in keyof Table]: Table[K] extends UnnamedFamily<infer T> ? MapKeySpec<T> : never };

/** The families with each spec given its property name: keys `<name>.<entry>`, documented as `<name>.<placeholder>`. */
function namedFamilies<const Table extends Record<string, UnnamedFamily<unknown>>>(table: Table): NamedFamilies<Table> {
  return Object.fromEntries(
    Object.entries(table).map(([name, { placeholder, ...fields }]) => [name, { ...fields, prefix: `${name}.`, key: `${name}.<${placeholder}>` }]),
  ) as NamedFamilies<Table>;
}

/** Every map-valued key family, by its name. */
export const keyFamilies = namedFamilies({
  'loom.secrets.keys': family('id', {
    description: 'key ring: key id to a base64 AES-256 key',
    defaultText: 'none',
    schema: base64Key(),
    expected: 'base64 text that decodes to exactly 32 bytes',
    secret: true,
  }),
  'loom.auth.tokens': family('identity', {
    description: 'bearer token of each calling identity (a service name or any other)',
    defaultText: 'none',
    schema: token(),
    expected: 'a token of at least 16 printable characters without spaces',
    secret: true,
  }),
  'loom.auth.roles': family('identity', {
    description: 'roles of an identity of loom.auth.tokens (a service identity has its own rights without any)',
    defaultText: 'none: the identity may call nothing',
    schema: listOf(loomRoles),
    expected: ROLE_LIST,
  }),
  'loom.scheduler.update.workflows': family('name', {
    description: 'loom.scheduler.update.default for one workflow, by its name or stored name <name>_<uuid>',
    defaultText: 'loom.scheduler.update.default',
    schema: oneOf(updatePolicies),
    expected: `one of ${updatePolicies.join(', ')}`,
  }),
  'loom.skills.timeouts': family('name', {
    description: 'loom.skills.timeoutMs for one skill, by its registered name',
    defaultText: 'loom.skills.timeoutMs',
    schema: integer(1, 3_600_000),
    expected: 'an integer from 1 to 3600000',
  }),
  'loom.skills.concurrency': family('name', {
    description: 'the concurrency cap of one skill, by its registered name',
    defaultText: 'loom.skills.maxConcurrency (keyword extraction: loom.skills.keywordExtraction.maxConcurrency)',
    schema: integer(1, 10_000),
    expected: 'an integer from 1 to 10000',
  }),
  'loom.skills.register': family('name', {
    description:
      'a skill the skill gateway registers (or replaces) under <name> when it starts, as JSON: {"capability", "url", and "pipeline", "version" or "parameters" as its capability takes}',
    defaultText: 'none',
    schema: jsonObject(),
    expected: 'a JSON object such as {"capability":"KEYWORD_EXTRACTION","url":"http://127.0.0.1:8086/extractKeywords"}',
  }),
});

/** The name of a map-valued key family. */
export type KeyFamily = keyof typeof keyFamilies;

/** Returns true if `key` is a configuration key loom reads. */
export function isKnownKey(key: string): boolean {
  if (Object.hasOwn(fixedKeys, key)) return true;
  if (serviceNames.some((service) => serviceAddressKey(service) === key)) return true;
  return Object.values(keyFamilies).some((map) => key.startsWith(map.prefix) && key.length > map.prefix.length);
}

/** One documented configuration key, for docs and CLI help. */
export interface ConfigKeyInfo {
  readonly key: string;
  /** The environment variable that sets it (append `_FILE` to read the value from a file). */
  readonly env: string;
  readonly description: string;
  readonly default: string;
}

function info(valueSpec: ValueSpec<unknown> & { readonly default?: unknown }): ConfigKeyInfo {
  return {
    key: valueSpec.key,
    env: envVarFor(valueSpec.key),
    description: valueSpec.description,
    default: valueSpec.defaultText ?? String(valueSpec.default),
  };
}

/**
 * Where a key family or per-service key is documented: after the last fixed key of its group, the longest run of
 * names they share (`loom.secrets.keys.<id>` after the last `loom.secrets.` key; none shared: at the end).
 */
function insertionPoint(rows: readonly ValueSpec<unknown>[], key: string): number {
  const names = key.split('.');
  for (let length = names.length - 1; length > 0; length--) {
    const group = `${names.slice(0, length).join('.')}.`;
    const last = rows.findLastIndex((row) => row.key.startsWith(group));
    if (last >= 0) return last + 1;
  }
  return rows.length;
}

function documentedInOrder(): ConfigKeyInfo[] {
  const rows: ValueSpec<unknown>[] = Object.values(fixedKeys);
  for (const extra of [...Object.values(keyFamilies), serviceAddressSpec]) rows.splice(insertionPoint(rows, extra.key), 0, extra);
  return rows.map(info);
}

/** Every configuration key, one row each, in the table's order; map and per-service keys are written with a placeholder. */
export const configKeys: readonly ConfigKeyInfo[] = documentedInOrder();
