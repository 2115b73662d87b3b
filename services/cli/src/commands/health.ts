import { credentials, makeGenericClientConstructor, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import {
  CircuitState,
  type DescribeGraphResponse,
  type DescribeStorageResponse,
  ExecutorClient,
  loomServiceNames,
  SecretsClient,
  SkillGatewayClient,
} from '@loom/contracts';
import { call, createClient } from '@loom/service-kit/client';
import { type GlobalOptions } from '../global-options.js';
import { printTable } from '../output.js';
import { cliIo } from '../cli-io.js';

interface HealthClient {
  Check(
    request: { service: string },
    metadata: Metadata,
    options: { deadline: number },
    callback: (error: ServiceError | null, response?: { status: string }) => void,
  ): void;
  close(): void;
}

const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/**
 * grpc.health.v1.Health/Check written out by hand: its two messages have one field each, and the
 * protocol definition of grpc-health-check parses a .proto file when loaded, time `loom health`
 * should not spend.
 */
const healthDefinition = {
  Check: {
    path: '/grpc.health.v1.Health/Check',
    requestStream: false,
    responseStream: false,
    // HealthCheckRequest { string service = 1 }
    requestSerialize: ({ service }: { service: string }): Buffer => {
      const text = Buffer.from(service, 'utf8');
      return text.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a]), varint(text.length), text]);
    },
    requestDeserialize: (): { service: string } => ({ service: '' }),
    responseSerialize: (): Buffer => Buffer.alloc(0),
    // HealthCheckResponse { ServingStatus status = 1 }
    responseDeserialize: (bytes: Buffer): { status: string } => {
      let value = 0;
      if (bytes[0] === 0x08) {
        for (let index = 1, shift = 0; index < bytes.length; index++, shift += 7) {
          const byte = bytes[index] ?? 0;
          value += (byte & 0x7f) * 2 ** shift;
          if (byte < 0x80) break;
        }
      }
      return { status: SERVING_STATUS[value] ?? `UNKNOWN (${value})` };
    },
  },
};

function varint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** One service's answer to a health check. */
export interface HealthRow {
  readonly service: string;
  readonly status: string;
}

/** Checks grpc.health.v1 for the server as a whole and for every loom.v1 service. */
export async function checkHealth(address: string, timeoutMs = 5000): Promise<HealthRow[]> {
  const Client = makeGenericClientConstructor(healthDefinition, 'Health') as unknown as new (
    address: string,
    creds: ReturnType<typeof credentials.createInsecure>,
  ) => HealthClient;
  const client = new Client(address, credentials.createInsecure());
  try {
    return await Promise.all(
      ['', ...loomServiceNames].map(
        (service) =>
          new Promise<HealthRow>((resolve) => {
            client.Check({ service }, new Metadata(), { deadline: Date.now() + timeoutMs }, (error, response) => {
              const name = service === '' ? '(server)' : service;
              if (error) resolve({ service: name, status: error.code === status.NOT_FOUND ? 'NOT_HOSTED' : `UNREACHABLE (${error.details})` });
              else resolve({ service: name, status: response?.status ?? 'UNKNOWN' });
            });
          }),
      ),
    );
  } finally {
    client.close();
  }
}

/** Where the secrets service keeps variables, when it is hosted and answers. */
async function describeStorage(globals: GlobalOptions): Promise<DescribeStorageResponse | undefined> {
  const client = createClient(SecretsClient, globals.address, {
    retry: false,
    deadlineMs: 5000,
    ...(globals.token === undefined ? {} : { token: globals.token }),
  });
  try {
    return await call(client, 'describeStorage', {});
  } catch {
    return undefined;
  } finally {
    client.close();
  }
}

/** Where the executor's embedded graph listens, when the executor is hosted and answers. */
async function describeGraph(globals: GlobalOptions): Promise<DescribeGraphResponse | undefined> {
  const client = createClient(ExecutorClient, globals.address, {
    retry: false,
    deadlineMs: 5000,
    ...(globals.token === undefined ? {} : { token: globals.token }),
  });
  try {
    return await call(client, 'describeGraph', {});
  } catch {
    return undefined;
  } finally {
    client.close();
  }
}

/** One registered skill as its gateway sees it. */
export interface SkillHealthRow {
  readonly skill: string;
  readonly reachable: boolean;
  readonly latencyMs: number;
  readonly circuit: string;
  readonly detail: string;
}

/** Each registered skill probed through the skill gateway (GET <base url>/health), when the gateway is hosted and answers. */
async function checkSkills(globals: GlobalOptions): Promise<SkillHealthRow[] | undefined> {
  const client = createClient(SkillGatewayClient, globals.address, {
    retry: false,
    deadlineMs: 10_000,
    ...(globals.token === undefined ? {} : { token: globals.token }),
  });
  try {
    const { skills } = await call(client, 'listSkills', {});
    return await Promise.all(
      skills.map(async ({ name }) => {
        const checked = await call(client, 'checkSkill', { name });
        return {
          skill: name,
          reachable: checked.reachable,
          latencyMs: checked.latencyMs,
          circuit: CircuitState[checked.circuitState]?.replace('CIRCUIT_STATE_', '') ?? String(checked.circuitState),
          detail: checked.detail,
        };
      }),
    );
  } catch (error) {
    // the services' own rows above already say whether the gateway serves; a caller without the read permission sees no skills
    cliIo().stderr.write(`loom: skills not checked: ${error instanceof Error ? error.message : String(error)}\n`);
    return undefined;
  } finally {
    client.close();
  }
}

/**
 * `loom health`: prints each service's status and, when the skill gateway is hosted, each
 * registered skill's; exit code 1 unless the server and every hosted service serve (a skill that
 * does not answer is shown, not counted: loom itself is healthy without it).
 */
export async function healthCommand(globals: GlobalOptions): Promise<number> {
  const { address, output } = globals;
  const rows = await checkHealth(address);
  const secretsServing = rows.some((row) => row.service === 'loom.v1.Secrets' && row.status === 'SERVING');
  const gatewayServing = rows.some((row) => row.service === 'loom.v1.SkillGateway' && row.status === 'SERVING');
  const executorServing = rows.some((row) => row.service === 'loom.v1.Executor' && row.status === 'SERVING');
  const [storage, skills, graph] = await Promise.all([
    secretsServing ? describeStorage(globals) : undefined,
    gatewayServing ? checkSkills(globals) : undefined,
    executorServing ? describeGraph(globals) : undefined,
  ]);
  printTable(
    output,
    rows.map((row) => ({ ...row })),
    {
      address,
      services: rows,
      ...(storage === undefined ? {} : { storage }),
      ...(skills === undefined ? {} : { skills }),
      ...(graph === undefined ? {} : { graph }),
    },
  );
  if (skills !== undefined && skills.length > 0 && output === 'text') {
    cliIo().stdout.write('\n');
    printTable(
      'text',
      skills.map((row) => ({
        skill: row.skill,
        status: row.reachable ? 'REACHABLE' : 'UNREACHABLE',
        latencyMs: row.latencyMs,
        circuit: row.circuit,
        detail: row.detail,
      })),
    );
  }
  if (storage !== undefined && output === 'text') {
    const [host, port] = storage.address.split(':');
    cliIo().stdout.write(
      storage.embedded
        ? `\nvariables: embedded PostgreSQL at ${storage.address} (psql -h ${host} -p ${port} -U postgres ${storage.database}), data in ${storage.dataDirectory}\n`
        : `\nvariables: PostgreSQL at ${storage.address}/${storage.database}\n`,
    );
  }
  if (graph !== undefined && output === 'text') {
    const state = graph.running
      ? `running, graphs: ${graph.graphs.length === 0 ? 'none yet' : graph.graphs.join(', ')}`
      : 'not started yet: it starts at its first use';
    const where = graph.address === '' ? 'on a port chosen at its first start' : `at ${graph.address}`;
    cliIo().stdout.write(`\ngraph: embedded graph ${where} (${state}), data in ${graph.dataDirectory}\n`);
  }
  const server = rows[0];
  const healthy = server?.status === 'SERVING' && rows.every((row) => row.status === 'SERVING' || row.status === 'NOT_HOSTED');
  return healthy ? 0 : 1;
}
