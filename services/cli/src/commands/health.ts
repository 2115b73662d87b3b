import { credentials, makeGenericClientConstructor, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { loomServiceNames } from '@loom/contracts';
import { healthDefinition } from '@loom/service-kit';
import { type OutputFormat, printTable } from '../output.js';

interface HealthClient {
  Check(
    request: { service: string },
    metadata: Metadata,
    options: { deadline: number },
    callback: (error: ServiceError | null, response?: { status: string }) => void,
  ): void;
  close(): void;
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

/** `loom health`: prints each service's status; exit code 1 unless the server and every hosted service serve. */
export async function healthCommand(address: string, format: OutputFormat): Promise<number> {
  const rows = await checkHealth(address);
  printTable(format, rows.map((row) => ({ ...row })), { address, services: rows });
  const server = rows[0];
  const healthy = server?.status === 'SERVING' && rows.every((row) => row.status === 'SERVING' || row.status === 'NOT_HOSTED');
  return healthy ? 0 : 1;
}
