import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configError } from './expect-config-error.js';
import { testDirectory } from './test-directory.js';
import { loadConfig, resolveConfig } from '../src/index.js';

const scratch = testDirectory('loom-config-');
const file = scratch.file;

describe('precedence: defaults < file < environment < --set', () => {
  const formats = {
    yaml: 'server:\n  port: 8201\nloom:\n  log:\n    level: warn\n',
    properties: 'server.port=8201\nloom.log.level=warn\n',
  };

  for (const [format, text] of Object.entries(formats)) {
    it(`with a ${format} file`, () => {
      const configFile = file(`loom.${format}`, text);
      const env = { SERVER_PORT: '8202' };
      const overrides = ['server.port=8203'];

      expect(loadConfig({ configFile, env, overrides }).server.port).toBe(8203);
      expect(loadConfig({ configFile, env }).server.port).toBe(8202);
      expect(loadConfig({ configFile, env: {} }).server.port).toBe(8201);
      expect(loadConfig({ env: {} }).server.port).toBe(8100);

      const { config, origins } = resolveConfig({ configFile, env });
      expect(config.log.level).toBe('warn');
      expect(origins.get('loom.log.level')).toBe(`config file ${configFile}`);
      expect(origins.get('server.port')).toBe('environment variable SERVER_PORT');
    });
  }
});

describe('config files', () => {
  it('YAML: nested maps, flat dotted keys and a mix give the same keys', () => {
    const key = randomBytes(32).toString('base64');
    const configFile = file(
      'loom.yml',
      [
        'loom.security.audit.enabled: false',
        'loom:',
        '  datasource.filesystemRoot: /srv/workflows',
        '  secrets:',
        '    keys:',
        `      k1: "${key}"`,
        '    activeKeyId: k1',
        '  services:',
        '    config-store:',
        '      address: store:8100',
        '  auth:',
        '    tokens:',
        '      executor: executor-token-0123456789',
        '  telemetry:',
        '    sampling:',
        '      ratio: 0.5',
        'server:',
        '  shutdown.deadlineMs: 2500',
        'unrelated:',
        '  setting: ignored',
      ].join('\n'),
    );
    const config = loadConfig({ configFile, env: {} });
    expect(config.security.audit.enabled).toBe(false);
    expect(config.datasource.filesystemRoot).toBe('/srv/workflows');
    expect(config.secrets).toEqual({ database: {}, keys: { k1: key }, activeKeyId: 'k1', keyRingFile: './.loom/keyring.json', generateKeys: false });
    expect(config.services['config-store']).toEqual({ address: 'store:8100' });
    expect(config.auth.tokens).toEqual({ executor: 'executor-token-0123456789' });
    expect(config.telemetry.sampling.ratio).toBe(0.5);
    expect(config.server.shutdown.deadlineMs).toBe(2500);
  });

  it('a properties file works the same as YAML', () => {
    const yaml = file(
      'loom.yaml',
      'loom:\n  experimental:\n    enabled: true\n  auth:\n    allowAnonymous: true\n  telemetry:\n    prometheus:\n      port: 0\n',
    );
    const properties = file(
      'loom.properties',
      '# same settings\nloom.experimental.enabled = true\nloom.auth.allowAnonymous: true\nloom.telemetry.prometheus.port=0\n',
    );
    expect({ ...loadConfig({ configFile: properties, env: {} }), sources: undefined }).toEqual({
      ...loadConfig({ configFile: yaml, env: {} }),
      sources: undefined,
    });
  });

  it('the development config in the repository loads', () => {
    const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '../../..');
    const config = loadConfig({ configFile: join(repoRoot, 'config/loom.dev.yaml'), env: {} });
    expect(config.experimental.enabled).toBe(true);
    expect(config.auth.allowAnonymous).toBe(true);
    expect(config.console.port).toBe(8180);
  });

  it('the console is off by default; a bad console port names the key', () => {
    expect(loadConfig({ env: {} }).console.port).toBeUndefined();
    const error = configError(() => loadConfig({ env: { LOOM_CONSOLE_PORT: '70000' } }));
    expect(error.message).toBe('loom.console.port: expected an integer from 0 to 65535, got "70000" (from environment variable LOOM_CONSOLE_PORT)');
  });

  it('a YAML string that holds a number is coerced; a YAML number where text is expected is refused', () => {
    expect(loadConfig({ configFile: file('a.yaml', 'server:\n  port: "8300"\n'), env: {} }).server.port).toBe(8300);
    const configFile = file('b.yaml', 'loom:\n  secrets:\n    activeKeyId: 2024\n');
    const error = configError(() => loadConfig({ configFile, env: {} }));
    expect(error.message).toBe(`loom.secrets.activeKeyId: expected a key id, got 2024 (from config file ${configFile}); quote the value to make it text`);
  });

  it('a value of the wrong type names the key and the file', () => {
    const configFile = file('loom.yaml', 'server: { port: "x" }\n');
    const error = configError(() => loadConfig({ configFile, env: {} }));
    expect(error.message).toBe(`server.port: expected an integer from 0 to 65535, got "x" (from config file ${configFile})`);
    expect(error.key).toBe('server.port');
    expect(error.source).toBe(`config file ${configFile}`);
  });

  it('a list or map where a value belongs is refused', () => {
    const configFile = file('loom.yaml', 'loom:\n  log:\n    level: [info]\n');
    expect(configError(() => loadConfig({ configFile, env: {} })).message).toMatch(/^loom\.log\.level: expected one of .*, got a list/);
  });

  it('an unknown key under loom. or server. is an error naming it, with a suggestion', () => {
    const configFile = file('loom.yaml', 'loom:\n  securty:\n    audit:\n      enabled: false\n');
    const error = configError(() => loadConfig({ configFile, env: {} }));
    expect(error.key).toBe('loom.securty.audit.enabled');
    expect(error.message).toBe(
      `loom.securty.audit.enabled: unknown configuration key (from config file ${configFile}); did you mean loom.security.audit.enabled?`,
    );
    const properties = file('loom.properties', 'server.prot=1\n');
    expect(configError(() => loadConfig({ configFile: properties, env: {} })).message).toContain('server.prot: unknown configuration key');
  });

  it('an unknown --set key is an error naming it', () => {
    const error = configError(() => loadConfig({ env: {}, overrides: ['loom.services.billing.address=billing:1'] }));
    expect(error.message).toBe('loom.services.billing.address: unknown configuration key (from --set)');
  });

  it('the same key written nested and flat is an error', () => {
    const configFile = file('loom.yaml', 'server.port: 1\nserver:\n  port: 2\n');
    expect(configError(() => loadConfig({ configFile, env: {} })).message).toBe(`server.port: set more than once (in config file ${configFile})`);
  });

  it('a missing config file is an error naming the path', () => {
    const configFile = join(scratch.path, 'missing.yaml');
    const error = configError(() => loadConfig({ configFile, env: {} }));
    expect(error.message).toContain(configFile);
    expect(error.message).toContain('ENOENT');
  });

  it('an unparsable config file is an error naming the file and the reason, without quoting its lines', () => {
    const configFile = file('loom.yaml', 'loom:\n  auth:\n    tokens:\n      executor: "s3cret-token-never-shown\n');
    const error = configError(() => loadConfig({ configFile, env: {} }));
    expect(error.message).toMatch(new RegExp(`^config file ${configFile}: not valid YAML: .+ at line \\d+, column \\d+$`));
    expect(error.message).not.toContain('s3cret');
  });

  it('a file that is not .yaml, .yml or .properties is refused', () => {
    const configFile = file('loom.json', '{}');
    expect(configError(() => loadConfig({ configFile, env: {} })).message).toBe(
      `config file ${configFile}: unsupported file type ".json", expected .yaml, .yml or .properties`,
    );
  });

  it('an empty file sets nothing', () => {
    const empty = file('loom.yaml', '');
    expect(loadConfig({ configFile: empty, env: {} })).toEqual({ ...loadConfig({ env: {} }), sources: { configFile: empty, valueFiles: [] } });
  });
});

describe('_FILE environment variables', () => {
  it('are all recorded as sources, loom keys or not, so that scripts are kept from them', () => {
    const secret = file('executor-token', 'executor-token-0123456789\n');
    const config = loadConfig({ env: { LOOM_AUTH_TOKENS_EXECUTOR_FILE: secret, POSTGRES_PASSWORD_FILE: '/run/secrets/pg', EMPTY_FILE: '' } });
    expect(config.sources.valueFiles).toEqual([
      { variable: 'LOOM_AUTH_TOKENS_EXECUTOR_FILE', path: secret },
      { variable: 'POSTGRES_PASSWORD_FILE', path: '/run/secrets/pg' },
    ]);
  });

  it('LOOM_AUTH_TOKENS_EXECUTOR_FILE gives auth.tokens.executor, trailing newlines trimmed', () => {
    const secret = file('executor-token', 'executor-token-0123456789\n\n');
    const config = loadConfig({ env: { LOOM_AUTH_TOKENS_EXECUTOR_FILE: secret } });
    expect(config.auth.tokens).toEqual({ executor: 'executor-token-0123456789' });
  });

  it('works for any key, e.g. the database URL and a key-ring key', () => {
    const key = randomBytes(32).toString('base64');
    const config = loadConfig({
      env: {
        LOOM_SECRETS_DATABASE_URL_FILE: file('db-url', 'postgresql://loom:pw@db/loom\r\n'),
        LOOM_SECRETS_KEYS_PRIMARY_FILE: file('key', `${key}\n`),
        SERVER_PORT_FILE: file('port', '8400\n'),
      },
    });
    expect(config.secrets.database.url).toBe('postgresql://loom:pw@db/loom');
    expect(config.secrets.keys).toEqual({ primary: key });
    expect(config.server.port).toBe(8400);
  });

  it('VAR and VAR_FILE both set is an error', () => {
    const secret = file('executor-token', 'executor-token-0123456789\n');
    const error = configError(() => loadConfig({ env: { LOOM_AUTH_TOKENS_EXECUTOR: 'executor-token-0123456789', LOOM_AUTH_TOKENS_EXECUTOR_FILE: secret } }));
    expect(error.key).toBe('loom.auth.tokens.executor');
    expect(error.message).toBe(
      'loom.auth.tokens.executor: both environment variables LOOM_AUTH_TOKENS_EXECUTOR and LOOM_AUTH_TOKENS_EXECUTOR_FILE are set; set only one',
    );
  });

  it('an unreadable _FILE is an error naming the variable', () => {
    const missing = join(scratch.path, 'nope');
    const error = configError(() => loadConfig({ env: { SERVER_PORT_FILE: missing } }));
    expect(error.message).toContain('SERVER_PORT_FILE');
    expect(error.message).toContain(missing);
    expect(error.key).toBe('server.port');
  });

  it('a bad value read from a file names the variable as its source', () => {
    const error = configError(() => loadConfig({ env: { SERVER_PORT_FILE: file('port', 'eighty\n') } }));
    expect(error.message).toMatch(
      /^server\.port: expected an integer from 0 to 65535, got "eighty" \(from environment variable SERVER_PORT_FILE \(file .+\)\)$/,
    );
  });

  it('a _FILE naming a directory is an error', () => {
    const error = configError(() => loadConfig({ env: { LOOM_AUTH_TOKENS_ALICE_FILE: scratch.path } }));
    expect(error.message).toBe(
      `loom.auth.tokens.alice: cannot read file ${scratch.path} named by environment variable LOOM_AUTH_TOKENS_ALICE_FILE: EISDIR: illegal operation on a directory, read`,
    );
  });
});

describe('workflow directories', () => {
  it('filesystemRoot defaults to ./.loom/workflows and the start-up directory follows it', () => {
    const config = loadConfig({ env: {} });
    expect(config.datasource.filesystemRoot).toBe('./.loom/workflows');
    expect(config.startup.workflows.directory).toBe('./.loom/workflows');
  });

  it('the start-up directory follows filesystemRoot when only filesystemRoot is set', () => {
    const configFile = file('loom.yaml', 'loom:\n  datasource:\n    filesystemRoot: /var/lib/loom/workflows\n');
    expect(loadConfig({ configFile, env: {} }).startup.workflows.directory).toBe('/var/lib/loom/workflows');
    expect(loadConfig({ configFile, env: { LOOM_DATASOURCE_FILESYSTEMROOT: '/env/root' } }).startup.workflows.directory).toBe('/env/root');
  });

  it('the start-up directory can be set on its own', () => {
    const config = loadConfig({
      env: { LOOM_DATASOURCE_FILESYSTEMROOT: '/data', LOOM_STARTUP_WORKFLOWS_DIRECTORY: '/seed' },
    });
    expect(config.datasource.filesystemRoot).toBe('/data');
    expect(config.startup.workflows.directory).toBe('/seed');
  });
});

describe('key ring', () => {
  it('a value that is not 32 bytes of base64 is an error naming loom.secrets.keys.<id>', () => {
    const configFile = file('loom.yaml', `loom:\n  secrets:\n    keys:\n      old: "${randomBytes(24).toString('base64')}"\n`);
    const error = configError(() => loadConfig({ configFile, env: {} }));
    expect(error.key).toBe('loom.secrets.keys.old');
    expect(error.message).toMatch(/^loom\.secrets\.keys\.old: expected base64 text that decodes to exactly 32 bytes/);
  });
});
