import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { expect } from 'vitest';
import { type ImageSpec, repoRoot, run } from './tools.js';

/** The parts of a resolved compose service the process runs need. */
export interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  secrets?: { source: string }[];
  volumes?: string[];
  depends_on?: Record<string, unknown>;
}

/** `docker-compose config` output, as far as the process runs read it. */
export interface ComposeConfig {
  services: Record<string, ComposeService>;
  secrets: Record<string, { file: string }>;
}

/** Resolves compose files in `dir` with `docker-compose config` (Debian's docker-compose 1.29). */
export function resolveCompose(dir: string, files: readonly string[], env: NodeJS.ProcessEnv): ComposeConfig {
  const resolved = run('docker-compose', [...files.flatMap((file) => ['-f', file]), 'config'], { cwd: dir, env: { PATH: process.env.PATH, ...env } });
  expect(resolved.status, resolved.stderr).toBe(0);
  return parse(resolved.stdout) as ComposeConfig;
}

/** The loom services of a compose file: those whose command is `serve`. */
export function loomServicesOf(compose: ComposeConfig): string[] {
  return Object.keys(compose.services).filter((name) => compose.services[name]?.command?.[0] === 'serve');
}

/** How one container runs as a process on this machine. */
export interface ContainerProcess {
  readonly args: string[];
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
}

export interface ContainerProcessOptions {
  readonly compose: ComposeConfig;
  readonly name: string;
  readonly image: ImageSpec;
  /** Directory under which the container's volume, /tmp and /run/secrets become directories. */
  readonly base: string;
  /** The loopback `host:port` standing for a container's `host:port`; undefined fails the run. */
  readonly mapAddress: (host: string, port: number) => string | undefined;
  readonly grpcPort: number;
  readonly metricsPort: number;
}

/**
 * A compose service as a process: the image's environment plus the service's, container
 * addresses mapped to loopback ones, its Docker secrets as files (only those it mounts), its
 * volume as a directory of its own, bound to the given ports.
 */
export function containerProcess(options: ContainerProcessOptions): ContainerProcess {
  const { compose, name, image } = options;
  const service = compose.services[name] as ComposeService;
  const dir = join(options.base, 'containers', name);
  const data = join(dir, 'var-lib-loom');
  const tmp = join(dir, 'tmp');
  const secretDir = join(dir, 'run-secrets');
  // a skill's bind-mounted data directory (./public/models at /data)
  const skillData = join(dir, 'data');
  for (const path of [data, tmp, secretDir, skillData]) mkdirSync(path, { recursive: true });
  for (const { source } of service.secrets ?? []) copyFileSync(compose.secrets[source]?.file as string, join(secretDir, source));
  // a loom service keeps its state on a volume of its own: named, or anonymous (one per container of a service that
  // scales, the executor); a skill service may share one (skills-data)
  if (service.command?.[0] === 'serve') expect([[`${name}-data:/var/lib/loom:rw`], ['/var/lib/loom']]).toContainEqual(service.volumes);

  const mapped = (whole: string, scheme: string | undefined, host: string, port: string): string => {
    const address = options.mapAddress(host, Number(port));
    if (address === undefined) throw new Error(`compose value ${whole}: no mapping for ${host}:${port}`);
    return `${scheme ?? ''}${address}`;
  };
  /** A value as the process sees it: container hosts (a whole `host:port`, or URLs anywhere in it, as in JSON) and paths mapped to this machine's. */
  const mapValue = (value: string): string =>
    /^([a-z][a-z0-9+]*:\/\/)?[a-z][a-z0-9-]*:\d+$/.test(value)
      ? value.replace(/^([a-z][a-z0-9+]*:\/\/)?([a-z][a-z0-9-]*):(\d+)$/, mapped).replace(/^\/run\/secrets\//, `${secretDir}/`)
      : value
          .replace(/([a-z][a-z0-9+]*:\/\/)([a-z][a-z0-9-]*):(\d+)/g, mapped)
          .replace(/^\/run\/secrets\//, `${secretDir}/`)
          .replace(/^\/data(?=\/|$)/, skillData);

  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  for (const [key, value] of Object.entries(image.env)) env[key] = value.replace('/var/lib/loom', data).replace(/^\/tmp$/, tmp);
  for (const [key, value] of Object.entries(service.environment ?? {})) env[key] = mapValue(value);
  Object.assign(env, {
    // what differs between containers and processes on one machine: the bind address and the ports
    SERVER_HOST: '127.0.0.1',
    SERVER_PORT: String(options.grpcPort),
    LOOM_TELEMETRY_PROMETHEUS_PORT: String(options.metricsPort),
  });
  const entrypoint = image.entrypoint.map((part) => part.replace('/opt/loom', repoRoot));
  expect(entrypoint[0]).toBe('node');
  return { args: [...entrypoint.slice(1), ...(service.command ?? [])], cwd: data, env };
}
