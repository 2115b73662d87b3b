import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { rpcMetricsInterceptor, serverTracingInterceptor } from '../src/grpc.js';
import { startTelemetry, type Telemetry } from '../src/index.js';
import { clientFor, freePort, secretsService, startServer, stopServer, unary } from './helpers.js';

let telemetry: Telemetry | undefined;
const servers: grpc.Server[] = [];
const clients: grpc.Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(servers.splice(0).map(stopServer));
  await telemetry?.shutdown();
  telemetry = undefined;
});

describe('rpcMetricsInterceptor', () => {
  it('counts and times calls by service, method and status on the Prometheus endpoint', async () => {
    // the Prometheus exporter reads port 0 as "unset" (and takes 9464), so find a free port first
    const port = await freePort();
    telemetry = startTelemetry({ serviceName: 'metrics-test', prometheusPort: port });
    expect(telemetry.prometheusUrl).toBe(`http://127.0.0.1:${port}/metrics`);
    await telemetry.ready;

    let fail = false;
    const { server, address } = await startServer(
      secretsService,
      {
        DecryptResources: (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) =>
          fail ? callback({ code: grpc.status.NOT_FOUND, details: 'missing' }) : callback(null, {}),
      },
      [serverTracingInterceptor(), rpcMetricsInterceptor(telemetry.meter)],
    );
    servers.push(server);
    const SecretsClient = clientFor(secretsService, 'Secrets');
    const client = new SecretsClient(address, grpc.credentials.createInsecure());
    clients.push(client);

    await unary(client, secretsService, 'DecryptResources', {});
    await unary(client, secretsService, 'DecryptResources', {});
    fail = true;
    await expect(unary(client, secretsService, 'DecryptResources', {})).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });

    const response = await fetch(telemetry.prometheusUrl!);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('# TYPE rpc_server_duration histogram');
    expect(text).toContain('# TYPE rpc_server_requests_total counter');
    const labels = (code: number): string =>
      `rpc_system="grpc",rpc_service="loom.v1.Secrets",rpc_method="DecryptResources",rpc_grpc_status_code="${code}",otel_scope_name="@loom/telemetry"`;
    expect(text).toContain(`rpc_server_requests_total{${labels(0)}} 2`);
    expect(text).toContain(`rpc_server_requests_total{${labels(5)}} 1`);
    expect(text).toContain(`rpc_server_duration_count{${labels(0)}} 2`);
  });

  it('reports through ready when the Prometheus port is taken', async () => {
    const port = await freePort();
    telemetry = startTelemetry({ serviceName: 'first', prometheusPort: port });
    await telemetry.ready;
    const second = startTelemetry({ serviceName: 'second', prometheusPort: port, register: false });
    await expect(second.ready).rejects.toMatchObject({ name: 'PrometheusStartError', url: `http://127.0.0.1:${port}/metrics` });
    await second.shutdown();
  });
});
