import { copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { checkNatsConfig, containerRoot } from './nats.js';
import { deployDir, run, scratchDir } from './tools.js';

const composeDir = join(deployDir, 'compose');

/** Runs `docker-compose config` (Debian's docker-compose 1.29) on the given files in `dir`. */
function composeConfig(dir: string, files: readonly string[], env: NodeJS.ProcessEnv, quiet = true): ReturnType<typeof run> {
  const args = [...files.flatMap((file) => ['-f', file]), 'config', ...(quiet ? ['-q'] : [])];
  return run('docker-compose', args, { cwd: dir, env: { PATH: process.env.PATH, ...env } });
}

function generatedSecrets(): string {
  const dir = join(scratchDir('secrets'), 'secrets');
  const result = run('sh', [join(composeDir, 'generate-secrets.sh'), dir]);
  expect(result.status, result.stderr).toBe(0);
  return dir;
}

interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: { published: number; target: number }[];
  container_name?: string;
  volumes?: string[];
  secrets?: { source: string }[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
}

interface ComposeFile {
  services: Record<string, ComposeService>;
  secrets: Record<string, { file: string }>;
  volumes: Record<string, unknown>;
}

/** The compose file's nats.conf and a nats_auth secret laid out as in the container; returns the configuration file's path. */
function natsContainer(config: string, auth: string): string {
  const root = scratchDir('nats-root');
  containerRoot(root, [
    ['/etc/nats/loom.conf', config.replace(/^(\s*store_dir:\s*)\/data$/m, `$1${join(root, 'data')}`)],
    ['/run/secrets/nats_auth', auth],
  ]);
  return join(root, 'etc', 'nats', 'loom.conf');
}

describe('generate-secrets.sh', () => {
  it('writes every secret once: a 32-byte key, tokens, the database URL; a second run keeps them', () => {
    const dir = generatedSecrets();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const key = readFileSync(join(dir, 'encryption-key'), 'utf8');
    expect(Buffer.from(key, 'base64')).toHaveLength(32);
    const token = readFileSync(join(dir, 'token-executor'), 'utf8');
    expect(token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    const password = readFileSync(join(dir, 'postgres-password'), 'utf8');
    expect(readFileSync(join(dir, 'database-url'), 'utf8')).toBe(`postgresql://loom:${password}@postgres:5432/loom`);
    expect(readFileSync(join(dir, 'neo4j-auth'), 'utf8')).toMatch(/^neo4j\/[A-Za-z0-9_-]{40,}$/);
    const natsToken = readFileSync(join(dir, 'nats-token'), 'utf8');
    expect(natsToken).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(readFileSync(join(dir, 'nats-auth.conf'), 'utf8')).toBe(`authorization {\n  token: "${natsToken}"\n}\n`);

    const again = run('sh', [join(composeDir, 'generate-secrets.sh'), dir]);
    expect(again.status).toBe(0);
    expect(again.stdout).not.toContain('created');
    expect(readFileSync(join(dir, 'encryption-key'), 'utf8')).toBe(key);
  });
});

describe('docker-compose config', () => {
  it('accepts docker-compose.yml with the generated secrets', () => {
    const result = composeConfig(composeDir, ['docker-compose.yml'], { LOOM_SECRETS_DIR: generatedSecrets() });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it("loom's annotation service reads dictionaries from and keeps pipelines in ./public/models at /data", () => {
    const result = composeConfig(composeDir, ['docker-compose.yml'], { LOOM_SECRETS_DIR: generatedSecrets() }, false);
    expect(result.status, result.stderr).toBe(0);
    const annotation = (parse(result.stdout) as { services: Record<string, ComposeService> }).services['annotation-service'];
    expect(annotation?.environment?.SKILL_DATA_DIRECTORY).toBe('/data');
    expect(annotation?.volumes).toContain(`${join(composeDir, 'public', 'models')}:/data:rw`);
  });

  it('runs NATS with JetStream on a named volume behind a health check, and wires the executor to it with its token', () => {
    const secrets = generatedSecrets();
    const result = composeConfig(composeDir, ['docker-compose.yml'], { LOOM_SECRETS_DIR: secrets }, false);
    expect(result.status, result.stderr).toBe(0);
    const config = parse(result.stdout) as ComposeFile;
    const nats = config.services.nats as ComposeService;
    // the official image, a pinned 2.x release (the alpine variant has wget for the health check)
    expect(nats.image).toMatch(/^nats:2\.\d+\.\d+-alpine$/);
    expect(nats.command).toEqual(['--config', '/etc/nats/loom.conf']);
    expect(nats.volumes).toEqual([`${join(composeDir, 'nats.conf')}:/etc/nats/loom.conf:ro`, 'nats-data:/data:rw']);
    expect(Object.keys(config.volumes)).toContain('nats-data');
    expect(nats.healthcheck?.test).toEqual(['CMD', 'wget', '-q', '-O', '/dev/null', 'http://127.0.0.1:8222/healthz?js-enabled-only=true']);
    expect(nats.secrets?.map((secret) => secret.source)).toEqual(['nats_auth']);

    const executor = config.services.executor as ComposeService;
    expect(executor.environment).toMatchObject({
      LOOM_MESSAGING_NATS_SERVERS: 'nats://nats:4222',
      LOOM_MESSAGING_NATS_TOKEN_FILE: '/run/secrets/nats_token',
    });
    expect(executor.secrets?.map((secret) => secret.source)).toContain('nats_token');
    expect(config.secrets.nats_token?.file).toBe(join(secrets, 'nats-token'));
    expect(config.secrets.nats_auth?.file).toBe(join(secrets, 'nats-auth.conf'));
    expect(executor.depends_on?.nats).toEqual({ condition: 'service_healthy' });
    // the executor alone holds the NATS token
    const holders = Object.entries(config.services)
      .filter(([, service]) => service.secrets?.some((secret) => secret.source === 'nats_token'))
      .map(([name]) => name);
    expect(holders).toEqual(['executor']);

    // nats-server itself accepts the configuration, the generated token file included from /run/secrets
    const text = readFileSync(join(composeDir, 'nats.conf'), 'utf8');
    expect(text).toMatch(/^\s*store_dir: \/data$/m);
    // each message on disk before its publish is answered (issue 51)
    expect(text).toMatch(/^\s*sync_interval: always$/m);
    const checked = checkNatsConfig(natsContainer(text, readFileSync(join(secrets, 'nats-auth.conf'), 'utf8')));
    expect(checked.stderr).toContain('is valid');
    expect(checked.status).toBe(0);
  });

  it('scales the executor (up --scale executor=3): no fixed name or host port, a volume per container, reached by service name', () => {
    const result = composeConfig(composeDir, ['docker-compose.yml'], { LOOM_SECRETS_DIR: generatedSecrets() }, false);
    expect(result.status, result.stderr).toBe(0);
    const config = parse(result.stdout) as ComposeFile;
    expect(Object.entries(config.services).filter(([, service]) => service.container_name !== undefined)).toEqual([]);
    const executor = config.services.executor as ComposeService;
    // loopback only, the host port Docker picks for each container (`docker compose port --index N executor 8100`)
    // (docker-compose 1.29 prints a port without a host port in the short form)
    expect(executor.ports as unknown).toEqual(['127.0.0.1::8100/tcp', '127.0.0.1::8101/tcp']);
    // an anonymous volume: each container its own, never one embedded graph opened by several processes
    expect(executor.volumes).toEqual(['/var/lib/loom']);
    expect(Object.keys(config.volumes)).not.toContain('executor-data');
    // the others reach whichever executor the service name answers with, never one container
    for (const [name, service] of Object.entries(config.services)) {
      const addresses = Object.values(service.environment ?? {}).filter((value) => /\bexecutor[-_0-9]*:\d+/.test(value));
      expect(
        addresses.every((value) => value === 'executor:8100'),
        name,
      ).toBe(true);
    }
    expect(config.services.scheduler?.environment?.LOOM_SERVICES_EXECUTOR_ADDRESS).toBe('executor:8100');
  });

  it('nats-server refuses a nats.conf whose token file is missing or broken, naming it', () => {
    const text = readFileSync(join(composeDir, 'nats.conf'), 'utf8');
    const missing = checkNatsConfig(natsContainer(text.replace('run/secrets/nats_auth', 'run/secrets/nats-auth'), 'authorization {}\n'));
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('nats-auth');
    const broken = checkNatsConfig(natsContainer(text, 'authorization {\n  token: "unterminated\n}\n'));
    expect(broken.status).not.toBe(0);
    expect(broken.stderr).toContain('nats_auth');
  });

  it('refuses a broken compose file, naming the problem', () => {
    const dir = scratchDir('compose-broken');
    const text = readFileSync(join(composeDir, 'docker-compose.yml'), 'utf8');
    // a service-level key that does not exist in format 3.7 (it belongs under deploy:)
    const broken = text.replace('  audit:\n    <<: *loom-service\n', '  audit:\n    <<: *loom-service\n    restart_policy: always\n');
    expect(broken).not.toBe(text);
    writeFileSync(join(dir, 'docker-compose.yml'), broken);
    const result = composeConfig(dir, ['docker-compose.yml'], { LOOM_SECRETS_DIR: generatedSecrets() });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('restart_policy');
  });

  it("skills.yml is the specification's deployment definitions: keys, images, environment, ports", () => {
    const result = composeConfig(composeDir, ['skills.yml'], { REGISTRY: 'registry.example.com' }, false);
    expect(result.status, result.stderr).toBe(0);
    const config = parse(result.stdout) as { version: string; services: Record<string, ComposeService> };
    expect(config.version).toBe('3.7');
    const services = config.services;
    expect(Object.keys(services).sort()).toEqual(['annotation-service', 'keyword-service', 'tikapdf', 'webdata-parser']);
    expect(services['annotation-service']?.image).toBe('registry.example.com/annotation-service:2.2.1');
    expect(services['keyword-service']?.image).toBe('registry.example.com/keyword-service:2.5.0');
    expect(services['webdata-parser']?.image).toBe('registry.example.com/webdata-parser:2.6.0-RC4');
    expect(services.tikapdf?.image).toBe('registry.example.com/tikapdf:2.7.0');
    expect(services['annotation-service']?.environment).toEqual({ SERVER_PORT: '8085', JAVA_OPTS: '-Xmx4g' });
    expect(services['keyword-service']?.environment).toEqual({ SERVER_PORT: '8086', 'server.tomcat.max-connections': '100', JAVA_OPTS: '-Xmx2g' });
    const ports = Object.fromEntries(
      Object.entries(services).map(([name, service]) => [name, service.ports?.map((port) => `${port.published}:${port.target}`)]),
    );
    expect(ports).toEqual({ 'annotation-service': ['8085:8085'], 'keyword-service': ['8086:8086'], 'webdata-parser': ['8087:8000'], tikapdf: ['8089:8089'] });
  });

  it('the version variables override the default tags', () => {
    const result = composeConfig(composeDir, ['skills.yml'], { REGISTRY: 'r.example', ANNOTATION_VERSION: '2.3.0' }, false);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('image: r.example/annotation-service:2.3.0');
  });

  it('the dictionary variant mounts ./public/models at /data with the cgroup memory options', () => {
    const result = composeConfig(composeDir, ['skills.yml', 'skills.dictionary.yml'], { REGISTRY: 'registry.example.com' }, false);
    expect(result.status, result.stderr).toBe(0);
    const annotation = (parse(result.stdout) as { services: Record<string, ComposeService> }).services['annotation-service'];
    expect(annotation?.environment?.JAVA_OPTS).toBe('-Xmx4g -XX:+UnlockExperimentalVMOptions -XX:+UseCGroupMemoryLimitForHeap');
    expect(annotation?.volumes).toEqual([`${join(composeDir, 'public', 'models')}:/data:rw`]);
    expect(annotation?.ports?.map((port) => `${port.published}:${port.target}`)).toEqual(['8085:8085']);
  });

  it('skills.yml without REGISTRY stops with a message naming it', () => {
    const result = composeConfig(composeDir, ['skills.yml'], {});
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('REGISTRY must name the skill image registry');
  });
});

describe('yamllint', () => {
  it('passes on every YAML file of deploy/', () => {
    const result = run('yamllint', ['--strict', '-c', '.yamllint.yaml', '.'], { cwd: deployDir });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('fails on a broken file: a duplicate key and a tab', () => {
    const dir = scratchDir('yamllint');
    copyFileSync(join(deployDir, '.yamllint.yaml'), join(dir, '.yamllint.yaml'));
    writeFileSync(join(dir, 'broken.yml'), 'services:\n  audit:\n    image: loom\n    image: other\n');
    const result = run('yamllint', ['--strict', '-c', join(dir, '.yamllint.yaml'), join(dir, 'broken.yml')]);
    expect(result.status).not.toBe(0);
    expect(result.stdout).toContain('duplication of key "image"');
  });
});
