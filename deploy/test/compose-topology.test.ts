import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { createScratchDatabase, queryOnce, type ScratchDatabase } from '@loom/postgres/testing';
import { parse } from 'yaml';
import { checkHealth } from '@loom/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, freePort, messagesOut, runAsync, runningAgain, startWorkflow, type ServiceProcess, startService, stopService } from './processes.js';
import { type ComposeConfig, type ComposeService, containerProcess, loomServicesOf, resolveCompose } from './compose-processes.js';
import { type NatsProcess, natsHandshake, startNatsOfCompose } from './nats.js';
import { deployDir, imageSpec, repoRoot, run, scratchDir } from './tools.js';
import { graphQueryArguments, testDatabaseUrl, writeEmbeddedGraphResource } from '@loom/testing';
import { GRPC_SERVICE_OF } from './grpc-services.js';

/**
 * deploy/compose/docker-compose.yml run for real without Docker: `docker-compose config` resolves
 * the file, then each loom service starts as its own `loom serve --services …` process with the
 * image's environment plus that service's, its container addresses mapped to loopback ports, its
 * Docker secrets as files (only those the service mounts), its volume as a directory of its own,
 * the compose file's PostgreSQL played by the machine's (a fresh database), and its nats service
 * run by a nats-server process with the compose file's configuration and secret.
 */
const adminUrl = testDatabaseUrl('deploy: compose topology');

const composeDir = join(deployDir, 'compose');
const cliMain = join(repoRoot, 'services/cli/dist/main.js');
const WORKFLOW = 'Graph import';
const INLET = 'People_6b7c8d9e-0f1a-4b2c-9d3e-4f5a6b7c8d9e';
const GRPC_PORT = 8100;
const METRICS_PORT = 9464;

/** Services in an order where each comes after those it depends on. */
function startOrder(services: Record<string, ComposeService>, names: readonly string[]): string[] {
  const ordered: string[] = [];
  const visit = (name: string): void => {
    if (ordered.includes(name) || !names.includes(name)) return;
    for (const dependency of Object.keys(services[name]?.depends_on ?? {})) visit(dependency);
    ordered.push(name);
  };
  for (const name of names) visit(name);
  return ordered;
}

describe.runIf(adminUrl !== undefined)('the compose topology as processes', () => {
  let database: ScratchDatabase;
  const base = scratchDir('topology');
  const image = imageSpec();
  const processes = new Map<string, ServiceProcess>();
  const launch = new Map<string, { args: string[]; cwd: string; env: NodeJS.ProcessEnv }>();
  const grpcPorts = new Map<string, number>();
  const metricsPorts = new Map<string, number>();
  let compose: ComposeConfig;
  let loomServices: string[];
  let skillServices: string[];
  let operatorToken: string;
  let otlp: Server;
  let nats: NatsProcess;
  const otlpRequests: string[] = [];

  const addressOf = (service: string): string => `127.0.0.1:${grpcPorts.get(service)}`;
  const cli = (service: string, args: readonly string[], input?: string) =>
    runAsync(process.execPath, ['--no-node-snapshot', cliMain, '--address', addressOf(service), '--token', operatorToken, ...args], {
      cwd: base,
      env: { PATH: process.env.PATH },
      ...(input === undefined ? {} : { input }),
    });

  async function start(name: string): Promise<ServiceProcess> {
    const { args, cwd, env } = launch.get(name) as { args: string[]; cwd: string; env: NodeJS.ProcessEnv };
    const started = await startService(name, process.execPath, args, { cwd, env });
    processes.set(name, started);
    return started;
  }

  beforeAll(async () => {
    // the secrets as an operator makes them, the database URL pointing at the machine's PostgreSQL
    const secretsDir = join(base, 'secrets');
    const generated = run('sh', [join(composeDir, 'generate-secrets.sh'), secretsDir]);
    expect(generated.status, generated.stderr).toBe(0);
    database = await createScratchDatabase(adminUrl as string, 'loom_compose');
    writeFileSync(join(secretsDir, 'database-url'), database.url);
    operatorToken = readFileSync(join(secretsDir, 'token-operator'), 'utf8');

    compose = resolveCompose(composeDir, ['docker-compose.yml'], { LOOM_SECRETS_DIR: secretsDir });
    loomServices = loomServicesOf(compose);
    skillServices = Object.keys(compose.services).filter((name) => compose.services[name]?.command?.[0] === 'skills');

    // the OpenTelemetry collector, played by a loopback HTTP server that takes OTLP requests
    otlp = createServer((request, response) => {
      otlpRequests.push(request.url ?? '');
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => otlp.listen(0, '127.0.0.1', resolve));
    const otlpPort = (otlp.address() as { port: number }).port;
    nats = await startNatsOfCompose(compose, join(base, 'containers', 'nats'));

    for (const name of [...loomServices, ...skillServices]) {
      grpcPorts.set(name, await freePort());
      metricsPorts.set(name, await freePort());
    }
    const mapAddress = (host: string, port: number): string | undefined => {
      if (host === 'otel-collector' && port === 4318) return `127.0.0.1:${otlpPort}`;
      if (host === 'nats' && port === 4222) return nats.address;
      if (loomServices.includes(host) && port === GRPC_PORT) return `127.0.0.1:${grpcPorts.get(host)}`;
      // a skill service at the port it listens on in its container (its SERVER_PORT)
      if (skillServices.includes(host) && String(port) === compose.services[host]?.environment?.SERVER_PORT) return `127.0.0.1:${grpcPorts.get(host)}`;
      return undefined;
    };
    for (const name of skillServices) {
      launch.set(
        name,
        containerProcess({ compose, name, image, base, mapAddress, grpcPort: grpcPorts.get(name) as number, metricsPort: metricsPorts.get(name) as number }),
      );
      const { args, cwd, env } = launch.get(name) as { args: string[]; cwd: string; env: NodeJS.ProcessEnv };
      processes.set(name, await startService(name, process.execPath, args, { cwd, env, ready: 'skill service listening' }));
    }
    for (const name of loomServices) {
      expect(compose.services[name]?.environment?.LOOM_TELEMETRY_PROMETHEUS_PORT).toBe(String(METRICS_PORT));
      launch.set(
        name,
        containerProcess({ compose, name, image, base, mapAddress, grpcPort: grpcPorts.get(name) as number, metricsPort: metricsPorts.get(name) as number }),
      );
    }
    for (const name of startOrder(compose.services, loomServices)) await start(name);
  });

  afterAll(async () => {
    for (const service of processes.values()) await stopService(service, 'SIGKILL');
    otlp?.close();
    await nats?.stop();
    await database?.drop();
  });

  it('runs the six services, each in its own process, each healthy and hosting only itself', async () => {
    expect(loomServices.sort()).toEqual(['audit', 'config-store', 'executor', 'scheduler', 'secrets', 'skill-gateway']);
    for (const name of loomServices) {
      const rows = await checkHealth(addressOf(name));
      const serving = rows.filter((row) => row.status === 'SERVING').map((row) => row.service);
      expect(serving).toEqual(['(server)', GRPC_SERVICE_OF[name]]);
    }
  });

  it("runs the compose file's NATS with JetStream on its volume, opened only by the token the executor is given", async () => {
    const executorEnv = launch.get('executor')?.env ?? {};
    expect(executorEnv.LOOM_MESSAGING_NATS_SERVERS).toBe(`nats://${nats.address}`);
    const token = readFileSync(executorEnv.LOOM_MESSAGING_NATS_TOKEN_FILE as string, 'utf8');
    expect(token).toBe(readFileSync(join(base, 'secrets', 'nats-token'), 'utf8'));
    const accepted = await natsHandshake(nats.port, token);
    expect(accepted.info).toMatchObject({ auth_required: true, jetstream: true });
    expect(accepted.reply).toBe('PONG');
    expect((await natsHandshake(nats.port, `${token}x`)).reply).toMatch(/^-ERR 'Authorization Violation'/);
    expect((await natsHandshake(nats.port, undefined)).reply).toMatch(/^-ERR 'Authorization Violation'/);
    // JetStream keeps its streams where the compose file puts the nats-data volume
    const jetstream = (await (await fetch(`http://127.0.0.1:${nats.monitorPort}/jsz`)).json()) as { config: { store_dir: string } };
    expect(jetstream.config.store_dir).toBe(join(base, 'containers', 'nats', 'data', 'jetstream'));
  });

  it("registers the compose file's skill services with the skill gateway at start, each reachable", async () => {
    const listed = await cli('skill-gateway', ['--output', 'json', 'skill', 'list']);
    expect(listed.status, listed.stderr).toBe(0);
    const skills = JSON.parse(listed.stdout) as { name: string; url: string }[];
    // the URLs of the compose file (http://annotation-service:8085/v2/annotate…), which the mapping to processes
    // accepted only because each names a skill service on the port its SERVER_PORT says
    const at = (service: string, path: string): string => `http://127.0.0.1:${grpcPorts.get(service)}${path}`;
    expect(skills.map((skill) => [skill.name, skill.url])).toEqual([
      ['annotation', at('annotation-service', '/v2/annotate')],
      ['keywords', at('keyword-service', '/extractKeywords')],
      ['pdf', at('tikapdf', '/parse')],
      ['webdata', at('webdata-parser', '/extract')],
    ]);
    // in the compose file's PostgreSQL, where every gateway of the stack shares it
    expect(await queryOnce(database.url, 'SELECT name FROM public.skill_registration ORDER BY name')).toEqual([
      { name: 'annotation' },
      { name: 'keywords' },
      { name: 'pdf' },
      { name: 'webdata' },
    ]);
    for (const { name } of skills) {
      const checked = await cli('skill-gateway', ['skill', 'check', name]);
      expect(checked.status, checked.stdout + checked.stderr).toBe(0);
    }
  });

  it('serves metrics where prometheus.yml scrapes them', async () => {
    const prometheus = parse(readFileSync(join(composeDir, 'prometheus.yml'), 'utf8')) as {
      scrape_configs: { static_configs?: { targets: string[] }[]; dns_sd_configs?: { names: string[]; type: string; port: number }[] }[];
    };
    // the executor by DNS (each container of a scaled service is an address of its name), the others by name
    const targets = prometheus.scrape_configs.flatMap((config) => [
      ...(config.static_configs ?? []).flatMap((entry) => entry.targets),
      ...(config.dns_sd_configs ?? []).flatMap((entry) => entry.names.map((name) => `${name}:${entry.port}`)),
    ]);
    expect(prometheus.scrape_configs.flatMap((config) => config.dns_sd_configs ?? [])).toEqual([{ names: ['executor'], type: 'A', port: METRICS_PORT }]);
    expect(targets.map((target) => target.split(':')[0]).sort()).toEqual([...loomServices].sort());
    for (const target of targets) {
      const [host, port] = target.split(':');
      expect(Number(port)).toBe(METRICS_PORT);
      const response = await fetch(`http://127.0.0.1:${metricsPorts.get(host as string)}/metrics`);
      expect(response.status).toBe(200);
    }
  });

  it('pushes and runs an example through the services; a killed executor loses nothing acknowledged', async () => {
    // config-store → secrets (seal) with the config-store's token; variables in PostgreSQL from the database-url secret
    const pushed = await cli('config-store', ['workflow', 'push', join(repoRoot, 'examples/graph-import.workflow.json')]);
    expect(pushed.status, pushed.stderr).toBe(0);
    const created = await cli('secrets', ['variable', 'create', 'GRAPH_IMPORT_NOTE', '--encrypted'], 'kept in PostgreSQL');
    expect(created.status, created.stderr).toBe(0);
    expect(await queryOnce(database.url, "SELECT encrypted FROM public.ecosystem_variable WHERE key = 'GRAPH_IMPORT_NOTE'")).toEqual([{ encrypted: true }]);
    // secrets → config-store (ResealWorkflows, with the secrets service's token) → secrets (seal): a rotation re-seals the stored workflows
    const rotated = await cli('secrets', ['--output', 'json', 'secrets', 'rotate', '--key-id', 'k1']);
    expect(rotated.status, rotated.stderr).toBe(0);
    expect(JSON.parse(rotated.stdout)).toMatchObject({ activeKeyId: 'k1', workflowsLeft: [] });
    // the scheduler reaches its PostgreSQL and the config store
    const schedules = await cli('scheduler', ['schedule', 'list']);
    expect(schedules.status, schedules.stderr).toBe(0);

    const writtenBy = async (count: number) =>
      eventually(`${count} messages written`, async () =>
        (await messagesOut(addressOf('executor'), operatorToken, WORKFLOW, 'Write people')) === count ? true : undefined,
      );
    const publish = async (ids: readonly number[]) => {
      for (const id of ids) {
        const published = await cli('executor', ['message', 'publish', WORKFLOW, '--inlet', INLET, '--body', JSON.stringify({ id, name: `person ${id}` })]);
        expect(published.status, published.stderr).toBe(0);
      }
    };

    // executor → config-store, secrets (DecryptResources: the executor's identity only), audit
    await startWorkflow(addressOf('executor'), operatorToken, WORKFLOW);
    await publish([1, 2, 3, 4, 5]);
    await writtenBy(5);

    const killed = await stopService(processes.get('executor') as ServiceProcess, 'SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    const executor = await start('executor');
    // the workflow is still RUNNING for the cluster (NATS): the restarted executor takes it up by itself
    await runningAgain(addressOf('executor'), operatorToken, WORKFLOW);
    await publish([6, 7, 8]);
    await writtenBy(3);

    // the graph on the executor's volume kept every write acknowledged before the kill
    const resource = writeEmbeddedGraphResource(join(base, 'graph.json'), executor.logLines, 'people_graph');
    const people = await cli('executor', graphQueryArguments(resource, 'MATCH (p:Person) RETURN p.id AS id ORDER BY p.id'));
    expect(people.status, people.stderr).toBe(0);
    expect((JSON.parse(people.stdout) as { id: number }[]).map((row) => row.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);

    // the operator's one start is in the audit log (on the audit service's volume; the restarted executor took the
    // workflow up from the cluster's run state, which is no new start), and its chain holds
    const audit = await cli('audit', ['audit', 'tail', '--type', 'WORKFLOW_START', '--output', 'json']);
    expect(audit.status, audit.stderr).toBe(0);
    expect(
      audit.stdout
        .trim()
        .split('\n')
        .filter((line) => line.includes(WORKFLOW)),
    ).toHaveLength(1);
    const verified = await cli('audit', ['audit', 'verify']);
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
    // each service's state lies in its own volume
    expect(readFileSync(join(base, 'containers/audit/var-lib-loom/audit.log'), 'utf8')).toContain('WORKFLOW_START');
  });

  it('runs the text-to-graph example through the services and the skill services; a killed executor loses no document', { timeout: 240_000 }, async () => {
    const pushed = await cli('config-store', ['workflow', 'push', join(repoRoot, 'examples/text-to-graph.workflow.yaml')]);
    expect(pushed.status, pushed.stderr).toBe(0);
    // the compact example's inlet, by its plain name
    const TEXT_INLET = 'Documents';
    const publish = async (id: string, text: string): Promise<void> => {
      const published = await cli('executor', [
        'message',
        'publish',
        'Text to graph',
        '--inlet',
        TEXT_INLET,
        '--body',
        JSON.stringify({ id, title: id, text }),
      ]);
      expect(published.status, published.stderr).toBe(0);
    };
    /** The documents the executor's embedded graph holds with their keywords, through the port its latest process logged. */
    const documents = async (): Promise<string[]> => {
      const executor = processes.get('executor') as ServiceProcess;
      const resource = writeEmbeddedGraphResource(join(base, 'knowledge-graph.json'), executor.logLines, 'knowledge_graph');
      const answer = await cli('executor', graphQueryArguments(resource, 'MATCH (d:Document)-[:HAS_KEYWORD]->(k:Keyword) RETURN DISTINCT d.id AS id'));
      return answer.status === 0 ? (JSON.parse(answer.stdout) as { id: string }[]).map((row) => row.id).sort() : [];
    };

    await startWorkflow(addressOf('executor'), operatorToken, 'Text to graph');
    await publish('doc-1', 'NASA tested the speed brake actuator of the space shuttle at the Kennedy Space Center in Florida.');
    await eventually('doc-1 in the graph', async () => ((await documents()).includes('doc-1') ? true : undefined));

    await stopService(processes.get('executor') as ServiceProcess, 'SIGKILL');
    await start('executor');
    await runningAgain(addressOf('executor'), operatorToken, 'Text to graph');
    await publish('doc-2', 'Engineers at Boeing replaced the speed brake actuator after a flight failure of the space shuttle.');
    await eventually('both documents in the graph', async () => ((await documents()).join() === 'doc-1,doc-2' ? true : undefined));
  });
});
