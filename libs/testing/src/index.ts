import { Writable } from 'node:stream';

export { closedPort } from './ports.js';

/** What captureStream collected. */
export interface CapturedStream {
  /** Give this to a logger (or anything that writes). */
  readonly stream: Writable;
  /** Everything written, as one text. */
  text(): string;
  /** Every non-empty line written, parsed as JSON (a JSON logger's entries). */
  lines(): Record<string, unknown>[];
}

/** A writable that keeps every chunk, for assertions on what was written to it. */
export function captureStream(): CapturedStream {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  });
  const text = (): string => chunks.join('');
  return {
    stream,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

export {
  NEO4J_POOL_ENV,
  neo4jLauncherArguments,
  Neo4jLauncherMissingError,
  neo4jResourceParameters,
  Neo4jStartError,
  startNeo4j,
  type Neo4jJvmTuning,
  type Neo4jResourceParameters,
  type Neo4jTestServer,
  type StartNeo4jOptions,
} from './neo4j.js';
export { type Neo4jPool, startNeo4jPool } from './neo4j-pool.js';
export { embeddedGraphPort, graphQueryArguments, writeEmbeddedGraphResource } from './embedded-graph.js';
export { TEST_DATABASE_ENV, TestDatabaseMissingError, testDatabaseUrl } from './test-database.js';
export { type TestCertificate, type TestCertificates, testCertificates } from './test-certificates.js';
export {
  NATS_SERVER_ENV,
  natsServerBinary,
  NatsServerMissingError,
  NatsServerStartError,
  startNatsCluster,
  startNatsServer,
  type NatsTestCluster,
  type StartNatsClusterOptions,
  type NatsTestServer,
  type StartNatsServerOptions,
} from './nats.js';
export { CLUSTER_CONTROL_ARGUMENTS, clusterExecutorArguments, EXECUTOR_STACK_ARGUMENTS } from './loom-serve-arguments.js';
export { OTLP_SPAN_KIND, type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.js';
export { checkedWorkflowText } from './workflow-texts.js';
