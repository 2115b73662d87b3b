import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { brokenChart, byKind, chartDir, lint, productionValues, render, renderOk, valuesFile } from './helm.js';
import { type KubeObject, type Located, parseManifests, restrictedViolations, validateAgainstSchemas, wiringProblems } from './kubernetes.js';
import { checkNatsConfig, containerRoot } from './nats.js';
import { scratchDir } from './tools.js';

/** The parts of a pod template these checks read. */
interface Pod {
  containers: {
    image: string;
    args?: string[];
    env?: { name: string; value?: string; valueFrom?: unknown }[];
    volumeMounts?: { name: string; mountPath: string }[];
  }[];
  volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string; items: { key: string; path: string }[] } }[];
}

interface StatefulSet {
  spec: {
    replicas: number;
    serviceName: string;
    template: { spec: Pod };
    volumeClaimTemplates: {
      metadata: { name: string };
      spec: { accessModes: string[]; storageClassName?: string; resources: { requests: { storage: string } } };
    }[];
  };
}

const named = (objects: readonly Located[], kind: string, name: string): KubeObject | undefined =>
  byKind(objects, kind).find((object) => object.metadata.name === name);

const podOf = (objects: readonly Located[], name: string): Pod =>
  ((named(objects, 'Deployment', name) ?? named(objects, 'StatefulSet', name))?.spec as { template: { spec: Pod } }).template.spec;

/** The executor's environment: name to value, and to the mounted file for `_FILE` variables. */
function executorEnv(objects: readonly Located[]): Record<string, string> {
  return Object.fromEntries((podOf(objects, 'loom-executor').containers[0]?.env ?? []).map((variable) => [variable.name, variable.value ?? '']));
}

const messagingEnv = (objects: readonly Located[]): Record<string, string> =>
  Object.fromEntries(Object.entries(executorEnv(objects)).filter(([name]) => name.startsWith('LOOM_MESSAGING_')));

/** A Secret item the chart rendered, decoded. */
function secretItem(objects: readonly Located[], key: string): string {
  const [secret] = byKind(objects, 'Secret') as (KubeObject & { data: Record<string, string> })[];
  return Buffer.from(secret?.data[key] ?? '', 'base64').toString('utf8');
}

/** nats-server's own check of the rendered nats.conf, laid out with the Secret's authorization file as the pod mounts them. */
function checkRenderedNatsConfig(objects: readonly Located[], authorization: string): ReturnType<typeof checkNatsConfig> {
  const configMap = named(objects, 'ConfigMap', 'loom-nats-config') as KubeObject & { data: Record<string, string> };
  const root = scratchDir('nats-pod');
  const pod = podOf(objects, 'loom-nats');
  const mounts = Object.fromEntries((pod.containers[0]?.volumeMounts ?? []).map((mount) => [mount.name, mount.mountPath]));
  expect(pod.containers[0]?.args).toEqual(['--config', `${mounts.config}/nats.conf`]);
  containerRoot(root, [
    [`${mounts.config}/nats.conf`, (configMap.data['nats.conf'] ?? '').replace(/^(\s*store_dir:\s*)\/data$/m, `$1${join(root, 'data')}`)],
    [`${mounts.authorization}/nats-auth.conf`, authorization],
  ]);
  return checkNatsConfig(join(root, `${mounts.config}/nats.conf`), { POD_NAME: 'loom-nats-0' });
}

describe("the chart's own NATS (default values)", () => {
  let objects: Located[];

  beforeAll(() => {
    objects = parseManifests(renderOk(chartDir));
  });

  it('runs NATS as a StatefulSet of the official 2.x image, its JetStream store on a PersistentVolumeClaim', () => {
    const statefulSet = named(objects, 'StatefulSet', 'loom-nats') as unknown as StatefulSet;
    expect(statefulSet.spec.replicas).toBe(1);
    expect(statefulSet.spec.serviceName).toBe('loom-nats-cluster');
    expect(statefulSet.spec.template.spec.containers[0]?.image).toMatch(/^nats:2\.\d+\.\d+$/);
    expect(statefulSet.spec.volumeClaimTemplates).toEqual([
      {
        metadata: expect.objectContaining({ name: 'data' }) as unknown,
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
      },
    ]);
    const mounts = statefulSet.spec.template.spec.containers[0]?.volumeMounts ?? [];
    expect(mounts).toContainEqual({ name: 'data', mountPath: '/data' });
    const config = (named(objects, 'ConfigMap', 'loom-nats-config') as KubeObject & { data: Record<string, string> }).data['nats.conf'] ?? '';
    expect(config).toMatch(/^jetstream \{\n {2}store_dir: \/data\n {2}max_file_store: 8GB\n/m);
    // every message on disk before its publish is answered (issue 51): an acknowledged message survives a power loss
    expect(config).toMatch(/^ {2}sync_interval: "always"$/m);
    expect(config).not.toContain('cluster {');
    // the Service the executor is given selects these pods
    const service = named(objects, 'Service', 'loom-nats') as KubeObject & { spec: { selector: Record<string, string>; ports: { port: number }[] } };
    expect(service.spec.selector).toEqual({ 'app.kubernetes.io/name': 'loom', 'app.kubernetes.io/instance': 'loom', 'app.kubernetes.io/component': 'nats' });
    expect(service.spec.ports.map((port) => port.port)).toContain(4222);
  });

  it('gives the executor alone the servers and the token, one replica by default', () => {
    expect(messagingEnv(objects)).toEqual({
      LOOM_MESSAGING_NATS_SERVERS: 'nats://loom-nats:4222',
      LOOM_MESSAGING_NATS_TOKEN_FILE: '/run/secrets/loom/nats-token',
      LOOM_MESSAGING_STREAM_REPLICAS: '1',
    });
    expect((named(objects, 'Deployment', 'loom-executor')?.spec as { replicas: number }).replicas).toBe(1);
    const holders = byKind(objects, 'Deployment')
      .filter((object) => JSON.stringify(object).includes('nats-token'))
      .map((object) => object.metadata.name);
    expect(holders).toEqual(['loom-executor']);
    // wiringProblems (the chart's tests) checks that the file is a mounted item of the Secret
    expect(wiringProblems(objects)).toEqual([]);
  });

  it('generates one token: the executor reads it, and nats-server accepts the configuration that includes it', () => {
    const token = secretItem(objects, 'nats-token');
    expect(token).toMatch(/^[A-Za-z0-9]{43}$/);
    const authorization = secretItem(objects, 'nats-auth.conf');
    expect(authorization).toBe(`authorization {\n  token: "${token}"\n}\n`);
    const checked = checkRenderedNatsConfig(objects, authorization);
    expect(checked.stderr).toContain('is valid');
    expect(checked.status).toBe(0);
  });

  it('a Secret without the authorization file, or a mount of no volume, is found', () => {
    const broken = brokenChart((text) => text.replace(/^ {2}nats-auth\.conf: .*$/m, ''), 'secret.yaml');
    expect(wiringProblems(parseManifests(renderOk(broken)))).toContain(
      'loom/templates/nats.yaml StatefulSet/loom-nats: Secret loom-credentials has no item nats-auth.conf',
    );
    const unmounted = brokenChart(
      (text) => text.replace('            - name: data\n              mountPath: /data', '            - name: store\n              mountPath: /data'),
      'nats.yaml',
    );
    expect(wiringProblems(parseManifests(renderOk(unmounted)))).toContain('loom/templates/nats.yaml StatefulSet/loom-nats: volume mount store names no volume');
  });

  it('admits NATS clients only from the executor and client pods, the cluster port only from its own servers', () => {
    const policy = named(objects, 'NetworkPolicy', 'loom-nats') as KubeObject & {
      spec: { ingress: { ports: { port: string }[]; from: { podSelector?: { matchLabels: Record<string, string> } }[] }[] };
    };
    const from = (port: string) =>
      policy.spec.ingress
        .find((rule) => rule.ports[0]?.port === port)
        ?.from.map((peer) => peer.podSelector?.matchLabels['app.kubernetes.io/component'] ?? 'other');
    expect(from('client')).toEqual(['executor', 'other']);
    expect(from('cluster')).toEqual(['nats']);
  });
});

describe('NATS with the production-like values', () => {
  it('clusters three servers, each with its own claim, and the executor keeps three copies of each message', () => {
    const objects = parseManifests(renderOk(chartDir, [productionValues]));
    const statefulSet = named(objects, 'StatefulSet', 'loom-nats') as unknown as StatefulSet;
    expect(statefulSet.spec.replicas).toBe(3);
    expect(statefulSet.spec.volumeClaimTemplates[0]?.spec).toMatchObject({ storageClassName: 'fast-ssd', resources: { requests: { storage: '100Gi' } } });
    const config = (named(objects, 'ConfigMap', 'loom-nats-config') as KubeObject & { data: Record<string, string> }).data['nats.conf'] ?? '';
    for (const index of [0, 1, 2]) expect(config).toContain(`nats://loom-nats-${index}.loom-nats-cluster:6222`);
    expect(config).toMatch(/^ {2}sync_interval: "always"$/m);
    expect(messagingEnv(objects)).toEqual({
      LOOM_MESSAGING_NATS_SERVERS: 'nats://loom-nats:4222',
      LOOM_MESSAGING_NATS_TOKEN_FILE: '/run/secrets/loom/nats-token',
      LOOM_MESSAGING_STREAM_REPLICAS: '3',
      LOOM_MESSAGING_STREAM_MAXAGEMS: '604800000',
      LOOM_MESSAGING_STREAM_MAXBYTES: '21474836480',
      LOOM_MESSAGING_CONSUMER_MAXACKPENDING: '4096',
    });
    // the token comes from the existing Secret, beside the other keys
    expect(podOf(objects, 'loom-nats').volumes.find((volume) => volume.name === 'authorization')?.secret?.secretName).toBe('loom-production-credentials');
    const checked = checkRenderedNatsConfig(objects, 'authorization {\n  token: "a-token-of-the-operator"\n}\n');
    expect(checked.stderr).toContain('is valid');
    expect(checked.status).toBe(0);
  });
});

describe('NATS clusters of the chart without messaging.stream.replicas', () => {
  it.each([3, 5])('a %d-server NATS keeps three copies of each message and key-value bucket, each written to disk before it is answered', (servers) => {
    const objects = parseManifests(renderOk(chartDir, [valuesFile(`nats:\n  replicas: ${servers}\n`)]));
    expect(messagingEnv(objects)['LOOM_MESSAGING_STREAM_REPLICAS']).toBe('3');
    const config = (named(objects, 'ConfigMap', 'loom-nats-config') as KubeObject & { data: Record<string, string> }).data['nats.conf'] ?? '';
    expect(config).toMatch(/^ {2}sync_interval: "always"$/m);
  });

  it('a sync interval set as a duration reaches nats.conf, and nats-server accepts it', () => {
    const objects = parseManifests(renderOk(chartDir, [valuesFile('nats:\n  jetstream:\n    syncInterval: 2m\n')]));
    const config = (named(objects, 'ConfigMap', 'loom-nats-config') as KubeObject & { data: Record<string, string> }).data['nats.conf'] ?? '';
    expect(config).toMatch(/^ {2}sync_interval: "2m"$/m);
    const checked = checkRenderedNatsConfig(objects, 'authorization {\n  token: "a-token-of-the-operator"\n}\n');
    expect(checked.stderr).toContain('is valid');
    expect(checked.status).toBe(0);
  });
});

describe('an external NATS instead of the chart’s', () => {
  const externalValues = [
    'nats:',
    '  enabled: false',
    'messaging:',
    '  nats:',
    '    servers: tls://nats-1.messaging:4222,tls://nats-2.messaging:4222',
    '    existingSecret: loom-nats-client',
    '    items:',
    '      token: token',
    '      tlsCa: ca.crt',
    '  stream:',
    '    replicas: 3',
    '    duplicateWindowMs: 300000',
    '    keepProcessedMs: 86400000',
    '  consumer:',
    '    ackWaitMs: 45000',
    '    maxDeliver: 10',
    '',
  ].join('\n');

  it('renders no NATS of its own and gives the executor the servers and the files of the named Secret', () => {
    const file = valuesFile(externalValues);
    const linted = lint(chartDir, [file]);
    expect(linted.status, linted.stdout).toBe(0);
    const objects = parseManifests(renderOk(chartDir, [file]));
    expect(objects.filter(({ object }) => object.metadata.name.startsWith('loom-nats'))).toEqual([]);
    expect(Object.keys((byKind(objects, 'Secret')[0] as KubeObject & { data: Record<string, string> }).data)).not.toContain('nats-token');
    expect(messagingEnv(objects)).toEqual({
      LOOM_MESSAGING_NATS_SERVERS: 'tls://nats-1.messaging:4222,tls://nats-2.messaging:4222',
      LOOM_MESSAGING_NATS_TOKEN_FILE: '/run/secrets/loom-messaging/token',
      LOOM_MESSAGING_NATS_TLS_CA_FILE: '/run/secrets/loom-messaging/ca.pem',
      LOOM_MESSAGING_STREAM_REPLICAS: '3',
      LOOM_MESSAGING_STREAM_DUPLICATEWINDOWMS: '300000',
      LOOM_MESSAGING_STREAM_KEEPPROCESSEDMS: '86400000',
      LOOM_MESSAGING_CONSUMER_ACKWAITMS: '45000',
      LOOM_MESSAGING_CONSUMER_MAXDELIVER: '10',
    });
    expect(podOf(objects, 'loom-executor').volumes.find((volume) => volume.name === 'messaging')?.secret).toMatchObject({
      secretName: 'loom-nats-client',
      items: [
        { key: 'token', path: 'token' },
        { key: 'ca.crt', path: 'ca.pem' },
      ],
    });
    expect(validateAgainstSchemas(objects)).toEqual([]);
    expect(restrictedViolations(objects)).toEqual([]);
    expect(wiringProblems(objects, ['loom-nats-client'])).toEqual([]);
  });

  it('without NATS at all the executor keeps messages in memory: no messaging settings', () => {
    const objects = parseManifests(renderOk(chartDir, [valuesFile('nats:\n  enabled: false\n')]));
    expect(messagingEnv(objects)).toEqual({});
    expect(byKind(objects, 'StatefulSet')).toEqual([]);
  });
});

describe('values.schema.json refuses bad messaging values, naming the field', () => {
  it.each([
    ['more stream copies than NATS servers', 'messaging:\n  stream:\n    replicas: 3\n', /at '\/messaging\/stream\/replicas': maximum: got 3, want 1/],
    [
      'an external NATS beside the chart’s own',
      'messaging:\n  nats:\n    servers: nats://nats:4222\n',
      /at '\/messaging\/nats\/servers': maxLength: got 16, want 0/,
    ],
    [
      'a server URL that is not nats:// or tls://',
      'nats:\n  enabled: false\nmessaging:\n  nats:\n    servers: http://nats:4222\n',
      /at '\/messaging\/nats\/servers': 'http:\/\/nats:4222' does not match pattern/,
    ],
    [
      'a duration with a unit (they are milliseconds)',
      'messaging:\n  consumer:\n    ackWaitMs: 30s\n',
      /at '\/messaging\/consumer\/ackWaitMs': got string, want integer/,
    ],
    ['a negative maximum age', 'messaging:\n  stream:\n    maxAgeMs: -1\n', /at '\/messaging\/stream\/maxAgeMs': minimum: got -1, want 0/],
    ['a setting the executor does not have', 'messaging:\n  stream:\n    maxAge: 7d\n', /at '\/messaging\/stream': additional properties 'maxAge' not allowed/],
    [
      'a count that is not a whole number',
      'messaging:\n  consumer:\n    maxDeliver: five\n',
      /at '\/messaging\/consumer\/maxDeliver': got string, want integer/,
    ],
    ['no deliveries at all', 'messaging:\n  consumer:\n    maxDeliver: 0\n', /at '\/messaging\/consumer\/maxDeliver': minimum: got 0, want 1/],
    ['an even number of NATS servers', 'nats:\n  replicas: 2\n', /at '\/nats\/replicas': value must be one of 1, 3, 5/],
    [
      'a sync interval NATS does not read',
      'nats:\n  jetstream:\n    syncInterval: sometimes\n',
      /at '\/nats\/jetstream\/syncInterval': 'sometimes' does not match pattern/,
    ],
    ['a store size in Kubernetes units', 'nats:\n  jetstream:\n    maxFileStore: 8Gi\n', /at '\/nats\/jetstream\/maxFileStore': '8Gi' does not match pattern/],
    ['a NATS token that cannot be quoted in its configuration', "secrets:\n  natsToken: 'a\"b\\\\c-0123456789abcdef'\n", /at '\/secrets\/natsToken'/],
  ])('%s', (_label, values, message) => {
    const result = render(chartDir, [valuesFile(values)]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(message);
  });

  it('the templates refuse the same contradictions for an install that skips the schema', () => {
    const copies = render(chartDir, [valuesFile('messaging:\n  stream:\n    replicas: 3\n')], ['--skip-schema-validation']);
    expect(copies.status).not.toBe(0);
    expect(copies.stderr).toContain('messaging.stream.replicas (3) exceeds nats.replicas (1)');
    const both = render(chartDir, [valuesFile('messaging:\n  nats:\n    servers: nats://nats:4222\n')], ['--skip-schema-validation']);
    expect(both.status).not.toBe(0);
    expect(both.stderr).toContain('messaging.nats.servers names an external NATS: set nats.enabled to false');
  });
});
