import { randomBytes } from 'node:crypto';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { configError } from '../test/expect-config-error.js';
import { fixedKeys, isDerived, keyFamilies, type LoomRole, type UpdatePolicy } from './config-keys.js';
import { configPath } from './config-tree.js';
import { graphSsoSettings, loadConfig, resolveConfig } from './load-config.js';

/** The value at a path of names in the configuration. */
function valueAt(config: object, path: readonly string[]): unknown {
  return path.reduce<unknown>((node, name) => (node as Record<string, unknown> | undefined)?.[name], config);
}

const KEY = randomBytes(32).toString('base64');
const TOKEN = 'executor-token-0123456789';

describe('loadConfig defaults', () => {
  it('puts every key of the table at its place in the configuration, with its default when nothing is configured', () => {
    const config = loadConfig({ env: {} });
    for (const [key, keySpec] of Object.entries(fixedKeys)) {
      if (!isDerived(keySpec)) expect(valueAt(config, configPath(key)), key).toEqual(keySpec.default);
    }
    for (const name of Object.keys(keyFamilies)) expect(valueAt(config, configPath(name)), name).toEqual({});
    expect(config.services).toEqual({ 'config-store': {}, scheduler: {}, executor: {}, secrets: {}, 'skill-gateway': {}, audit: {} });
    expect(config.sources).toEqual({ valueFiles: [] });
  });

  it('places no key where another key has its place (no name is the start of another)', () => {
    const paths = [...Object.keys(fixedKeys), ...Object.keys(keyFamilies), 'loom.services'].map((key) => configPath(key).join('.'));
    for (const path of paths)
      expect(
        paths.filter((other) => other.startsWith(`${path}.`)),
        path,
      ).toEqual([]);
  });

  it('types each value as its key reads it', () => {
    const config = loadConfig({ env: {} });
    expectTypeOf(config.telemetry.sampling.ratio).toEqualTypeOf<number>();
    expectTypeOf(config.telemetry.otlp.endpoint).toEqualTypeOf<string | undefined>();
    expectTypeOf(config.startup.workflows.directory).toEqualTypeOf<string>();
    expectTypeOf(config.auth.anonymousRoles).toEqualTypeOf<LoomRole[]>();
    expectTypeOf(config.skills.timeouts).toEqualTypeOf<{ readonly [name: string]: number }>();
    expectTypeOf(config.scheduler.update.default).toEqualTypeOf<UpdatePolicy>();
  });

  it('reads per-skill time-outs and caps as numbers, by skill name', () => {
    const { skills } = loadConfig({ env: {}, overrides: ['loom.skills.timeouts.nlp v2=1500', 'loom.skills.concurrency.keywords=8'] });
    expect(skills.timeouts).toStrictEqual({ 'nlp v2': 1500 });
    expect(skills.concurrency).toStrictEqual({ keywords: 8 });
    expect(configError(() => loadConfig({ env: {}, overrides: ['loom.skills.concurrency.keywords=0'] })).message).toContain(
      'loom.skills.concurrency.keywords: expected an integer from 1 to 10000',
    );
    expect(configError(() => loadConfig({ env: {}, overrides: ['loom.skills.backoff.maxMs=10'] })).message).toContain(
      'loom.skills.backoff.maxMs: expected at least',
    );
  });

  it('reads the skills to register at start as JSON objects, by skill name; text that is not an object names the key', () => {
    const keywords = '{"capability":"KEYWORD_EXTRACTION","url":"http://127.0.0.1:8086/extractKeywords"}';
    const { skills } = loadConfig({
      env: { LOOM_SKILLS_REGISTER_KEYWORDS: keywords },
      overrides: ['loom.skills.register.nlp={"capability":"ENTITY_EXTRACTION","url":"http://x/v2/annotate","pipeline":"default","version":"v2"}'],
    });
    expect(skills.register).toStrictEqual({
      keywords: { capability: 'KEYWORD_EXTRACTION', url: 'http://127.0.0.1:8086/extractKeywords' },
      nlp: { capability: 'ENTITY_EXTRACTION', url: 'http://x/v2/annotate', pipeline: 'default', version: 'v2' },
    });
    expect(configError(() => loadConfig({ env: {}, overrides: ['loom.skills.register.pdf=http://127.0.0.1:8089'] })).message).toContain(
      'loom.skills.register.pdf: expected a JSON object',
    );
    expect(configError(() => loadConfig({ env: {}, overrides: ['loom.skills.register.pdf=[1]'] })).message).toContain(
      'loom.skills.register.pdf: expected a JSON object',
    );
  });

  it('leaves optional values absent rather than undefined', () => {
    const config = loadConfig({ env: {} });
    expect(Object.keys(config.tls)).toEqual([]);
    expect(Object.keys(config.secrets).sort()).toEqual(['database', 'generateKeys', 'keyRingFile', 'keys']);
    expect(Object.keys(config.secrets.database)).toEqual([]);
    expect(Object.keys(config.services.executor)).toEqual([]);
  });
});

describe('loom.data.directory', () => {
  it('moves every state default with it', () => {
    const { config, origins } = resolveConfig({ env: { LOOM_DATA_DIRECTORY: '/var/lib/loom/' } });
    expect(config.data).toEqual({ directory: '/var/lib/loom/', skillsDirectory: '/var/lib/loom/skills' });
    expect(config.datasource.filesystemRoot).toBe('/var/lib/loom/workflows');
    expect(config.startup.workflows.directory).toBe('/var/lib/loom/workflows');
    expect(config.security.audit.log.path).toBe('/var/lib/loom/audit.log');
    expect(config.secrets.keyRingFile).toBe('/var/lib/loom/keyring.json');
    expect(config.embedded.postgres.dataDir).toBe('/var/lib/loom/pgdata');
    expect(config.embedded.graph.dataDir).toBe('/var/lib/loom/graphdata');
    expect(config.scheduler.stateFile).toBe('/var/lib/loom/scheduler-state.json');
    expect(origins.get('loom.data.directory')).toBe('environment variable LOOM_DATA_DIRECTORY');
    expect(origins.get('loom.secrets.keyRingFile')).toBe('default');
  });

  it('leaves a state path that has its own key where that key puts it', () => {
    const config = loadConfig({ env: {}, overrides: ['loom.data.directory=/data', 'loom.security.audit.log.path=/logs/audit.log'] });
    expect(config.security.audit.log.path).toBe('/logs/audit.log');
    expect(config.secrets.keyRingFile).toBe('/data/keyring.json');
  });

  it('refuses an empty directory, naming the key', () => {
    expect(configError(() => loadConfig({ env: { LOOM_DATA_DIRECTORY: '' } })).message).toMatch(/^loom\.data\.directory: expected a non-empty directory path/);
  });
});

describe('environment variables', () => {
  it('set keys by their relaxed-binding names', () => {
    const config = loadConfig({
      env: {
        SERVER_PORT: '9000',
        LOOM_SECURITY_AUDIT_ENABLED: 'false',
        LOOM_DATASOURCE_FILESYSTEMROOT: '/data/workflows',
        LOOM_SERVICES_CONFIGSTORE_ADDRESS: 'config-store:8100',
        LOOM_SERVICES_SKILLGATEWAY_ADDRESS: 'skills:8100',
        LOOM_TELEMETRY_SAMPLING_RATIO: '0.25',
        LOOM_LOG_LEVEL: 'debug',
        LOOM_SECRETS_DATABASE_URL: 'postgres://loom:pw@db:5432/loom',
        PATH: '/usr/bin',
        LOOM_SOMETHING_UNKNOWN: 'ignored',
      },
    });
    expect(config.server.port).toBe(9000);
    expect(config.security.audit.enabled).toBe(false);
    expect(config.datasource.filesystemRoot).toBe('/data/workflows');
    expect(config.startup.workflows.directory).toBe('/data/workflows');
    expect(config.services['config-store'].address).toBe('config-store:8100');
    expect(config.services['skill-gateway'].address).toBe('skills:8100');
    expect(config.services.executor.address).toBeUndefined();
    expect(config.telemetry.sampling.ratio).toBe(0.25);
    expect(config.log.level).toBe('debug');
    expect(config.secrets.database.url).toBe('postgres://loom:pw@db:5432/loom');
  });

  it('name map entries: service names keep their hyphen, other names are lower-cased', () => {
    const config = loadConfig({
      env: {
        LOOM_AUTH_TOKENS_EXECUTOR: TOKEN,
        LOOM_AUTH_TOKENS_SKILLGATEWAY: 'gateway-token-0123456789',
        LOOM_AUTH_TOKENS_ALICE: 'alice-token-0123456789',
        LOOM_SECRETS_KEYS_K2024: KEY,
      },
    });
    expect(config.auth.tokens).toEqual({
      executor: TOKEN,
      'skill-gateway': 'gateway-token-0123456789',
      alice: 'alice-token-0123456789',
    });
    expect(config.secrets.keys).toEqual({ k2024: KEY });
  });

  it('override a map entry set elsewhere whose name normalises the same way', () => {
    const config = loadConfig({
      env: { LOOM_AUTH_TOKENS_MYAPP: 'from-environment-0123456789' },
      overrides: ['loom.auth.tokens.my-app=from-set-0123456789012345'],
    });
    expect(config.auth.tokens).toEqual({ 'my-app': 'from-set-0123456789012345' });
  });

  it('fall back to OTEL_EXPORTER_OTLP_ENDPOINT only when the key is not set', () => {
    expect(loadConfig({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318' } }).telemetry.otlp.endpoint).toBe('http://otel:4318');
    const both = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318', LOOM_TELEMETRY_OTLP_ENDPOINT: 'https://collector:4318' };
    expect(loadConfig({ env: both }).telemetry.otlp.endpoint).toBe('https://collector:4318');
    const error = configError(() => loadConfig({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'otel:4318' } }));
    expect(error.message).toBe(
      'loom.telemetry.otlp.endpoint: expected an http:// or https:// URL, got "otel:4318" (from environment variable OTEL_EXPORTER_OTLP_ENDPOINT)',
    );
  });
});

describe('--set overrides', () => {
  it('win over the environment and may contain "="', () => {
    const config = loadConfig({ env: { SERVER_PORT: '9000' }, overrides: ['server.port=9001', `loom.secrets.keys.k1=${KEY}`] });
    expect(config.server.port).toBe(9001);
    expect(config.secrets.keys).toEqual({ k1: KEY });
  });

  it('the last one for a key wins', () => {
    expect(loadConfig({ env: {}, overrides: ['server.port=1', 'server.port=2'] }).server.port).toBe(2);
  });

  it('an empty value unsets an optional key', () => {
    const config = loadConfig({ env: { LOOM_SECRETS_DATABASE_URL: 'postgres://db/loom' }, overrides: ['loom.secrets.database.url='] });
    expect(config.secrets.database.url).toBeUndefined();
  });

  it('a malformed override is an error', () => {
    const error = configError(() => loadConfig({ env: {}, overrides: ['server.port'] }));
    expect(error.message).toBe('--set "server.port": expected key=value');
  });
});

describe('bad values', () => {
  it('name the key, the expectation, the value and its source on one line', () => {
    const error = configError(() => loadConfig({ env: { SERVER_PORT: 'abc' } }));
    expect(error.message).toBe('server.port: expected an integer from 0 to 65535, got "abc" (from environment variable SERVER_PORT)');
    expect(error.key).toBe('server.port');
    expect(error.source).toBe('environment variable SERVER_PORT');
  });

  it('accept only true and false for booleans', () => {
    const error = configError(() => loadConfig({ env: {}, overrides: ['loom.security.audit.enabled=yes'] }));
    expect(error.message).toBe('loom.security.audit.enabled: expected true or false, got "yes" (from --set)');
  });

  it.each([
    ['server.port=70000', 'server.port'],
    ['server.shutdown.deadlineMs=-1', 'server.shutdown.deadlineMs'],
    ['loom.datasource.filesystemRoot=', 'loom.datasource.filesystemRoot'],
    ['loom.telemetry.sampling.ratio=2', 'loom.telemetry.sampling.ratio'],
    ['loom.log.level=verbose', 'loom.log.level'],
    ['loom.services.executor.address=executor', 'loom.services.executor.address'],
    ['loom.secrets.database.url=mysql://db/loom', 'loom.secrets.database.url'],
    ['loom.scheduler.database.url=mysql://db/loom', 'loom.scheduler.database.url'],
    ['loom.scheduler.update.default=stop', 'loom.scheduler.update.default'],
    ['loom.scheduler.update.workflows.Nightly import=never', 'loom.scheduler.update.workflows.Nightly import'],
    ['loom.scheduler.lease.pollMs=10', 'loom.scheduler.lease.pollMs'],
  ])('%s is refused', (override, key) => {
    const error = configError(() => loadConfig({ env: {}, overrides: [override] }));
    expect(error.key).toBe(key);
    expect(error.message.startsWith(`${key}: expected `)).toBe(true);
    expect(error.message).not.toContain('\n');
  });

  it('never repeat a secret', () => {
    const shortToken = configError(() => loadConfig({ env: { LOOM_AUTH_TOKENS_EXECUTOR: 'hunter2' } }));
    expect(shortToken.message).toBe(
      'loom.auth.tokens.executor: expected a token of at least 16 printable characters without spaces, got a value of 7 characters (not shown) (from environment variable LOOM_AUTH_TOKENS_EXECUTOR)',
    );
    const badUrl = configError(() => loadConfig({ env: { LOOM_SECRETS_DATABASE_URL: 'mysql://root:s3cret@db/loom' } }));
    expect(badUrl.message).not.toContain('s3cret');
  });

  it('a key-ring value that is not 32 bytes of base64 names its key', () => {
    const error = configError(() => loadConfig({ env: {}, overrides: [`loom.secrets.keys.k1=${randomBytes(16).toString('base64')}`] }));
    expect(error.key).toBe('loom.secrets.keys.k1');
    expect(error.message).toMatch(
      /^loom\.secrets\.keys\.k1: expected base64 text that decodes to exactly 32 bytes, got a value of 24 characters \(not shown\) \(from --set\)$/,
    );
  });
});

describe('rules across keys', () => {
  it('the active key id must be in the key ring', () => {
    expect(loadConfig({ env: {}, overrides: [`loom.secrets.keys.k1=${KEY}`, 'loom.secrets.activeKeyId=k1'] }).secrets.activeKeyId).toBe('k1');
    const error = configError(() => loadConfig({ env: { LOOM_SECRETS_ACTIVEKEYID: 'k2' }, overrides: [`loom.secrets.keys.k1=${KEY}`] }));
    expect(error.message).toBe(
      'loom.secrets.activeKeyId: expected one of the loom.secrets.keys ids (k1), got "k2" (from environment variable LOOM_SECRETS_ACTIVEKEYID)',
    );
  });

  it('TLS needs all three files or none', () => {
    const all = ['loom.tls.certFile=/tls/cert.pem', 'loom.tls.keyFile=/tls/key.pem', 'loom.tls.caFile=/tls/ca.pem'];
    expect(loadConfig({ env: {}, overrides: all }).tls).toEqual({ certFile: '/tls/cert.pem', keyFile: '/tls/key.pem', caFile: '/tls/ca.pem' });
    const error = configError(() => loadConfig({ env: {}, overrides: all.slice(0, 2) }));
    expect(error.key).toBe('loom.tls.caFile');
    expect(error.message).toContain('loom.tls.certFile is set (from --set)');
  });
});

describe('scheduler keys', () => {
  it('read a per-workflow update policy by the name as written, spaces and dots included', () => {
    const config = loadConfig({
      env: { LOOM_SCHEDULER_UPDATE_DEFAULT: 'keep' },
      overrides: ['loom.scheduler.update.workflows.Nightly import v1.2=restart', 'loom.scheduler.database.url=postgresql://db:5432/loom'],
    });
    expect(config.scheduler.update).toEqual({ default: 'keep', workflows: { 'Nightly import v1.2': 'restart' } });
    expect(config.scheduler.database.url).toBe('postgresql://db:5432/loom');
  });

  it('a lease timeout under two polls, or a restart cap under the first delay, names the key', () => {
    const lease = configError(() => loadConfig({ env: {}, overrides: ['loom.scheduler.lease.pollMs=1000', 'loom.scheduler.lease.timeoutMs=1500'] }));
    expect(lease.message).toBe('loom.scheduler.lease.timeoutMs: expected at least twice loom.scheduler.lease.pollMs (1000), got 1500 (from --set)');
    const restart = configError(() =>
      loadConfig({ env: { LOOM_SCHEDULER_RESTART_INITIALDELAYMS: '5000' }, overrides: ['loom.scheduler.restart.maxDelayMs=100'] }),
    );
    expect(restart.key).toBe('loom.scheduler.restart.maxDelayMs');
    expect(restart.message).toContain('initialDelayMs (5000)');
  });
});

describe('resolveConfig', () => {
  it('tells where each value came from', () => {
    const { origins } = resolveConfig({ env: { SERVER_PORT: '1' }, overrides: ['loom.log.level=warn'] });
    expect(origins.get('server.port')).toBe('environment variable SERVER_PORT');
    expect(origins.get('loom.log.level')).toBe('--set');
    expect(origins.get('server.host')).toBe('default');
    expect(origins.get('loom.startup.workflows.directory')).toBe('default');
  });
});

describe('roles and single sign-on keys', () => {
  it('read the roles of each identity and of anonymous calls', () => {
    const config = loadConfig({
      overrides: ['loom.auth.roles.alice=editor, operator', 'loom.auth.roles.bob=viewer', 'loom.auth.anonymousRoles=viewer'],
    });
    expect(config.auth.roles).toEqual({ alice: ['editor', 'operator'], bob: ['viewer'] });
    expect(config.auth.anonymousRoles).toEqual(['viewer']);
  });

  it('refuse a role loom does not have, naming the key', () => {
    expect(() => loadConfig({ overrides: ['loom.auth.roles.alice=editor,superuser'] })).toThrow(/loom\.auth\.roles\.alice/);
  });

  it('need the provider configuration and the URI together, and the service account when impersonating', () => {
    expect(() => loadConfig({ overrides: ['loom.graph.sso.uri=neo4j://graph:7687'] })).toThrow(/loom\.graph\.sso\.providerConfigFile is required/);
    expect(() => loadConfig({ overrides: ['loom.graph.sso.uri=neo4j://graph:7687', 'loom.graph.sso.providerConfigFile=/conf/keycloak.json'] })).toThrow(
      /loom\.graph\.sso\.user is required/,
    );
    const bearer = loadConfig({
      overrides: ['loom.graph.sso.uri=neo4j://graph:7687', 'loom.graph.sso.providerConfigFile=/conf/keycloak.json', 'loom.graph.sso.mode=bearer'],
    });
    expect(graphSsoSettings(bearer.graph.sso)).toEqual({ providerConfigFile: '/conf/keycloak.json', uri: 'neo4j://graph:7687', mode: 'bearer' });
    expect(() => loadConfig({ overrides: ['loom.graph.sso.uri=http://graph:7474'] })).toThrow(/loom\.graph\.sso\.uri/);
  });
});
