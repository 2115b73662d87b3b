import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { brokenChart, byKind, chartDir, lint, productionValues, render, renderOk, runHelm, valuesFile } from './helm.js';
import { type KubeObject, type Located, parseManifests, restrictedViolations, validateAgainstSchemas, wiringProblems } from './kubernetes.js';
import { GRPC_SERVICE_OF } from './grpc-services.js';
import { scratchDir } from './tools.js';

beforeAll(() => {
  const version = runHelm(['version', '--short']);
  expect(version.status, version.stderr).toBe(0);
  expect(version.stdout).toMatch(/^v3\./);
});

/**
 * NOTES.txt rendered by helm. `helm template` leaves it out and helm 3's `install --dry-run`
 * needs a cluster, so a copy of the chart defines NOTES.txt's text as a partial and renders it
 * into a ConfigMap, with the same values and release.
 */
function notes(valuesFiles: readonly string[] = []): string {
  const dir = join(scratchDir('notes'), 'loom');
  cpSync(chartDir, dir, { recursive: true });
  const templates = join(dir, 'templates');
  const text = readFileSync(join(templates, 'NOTES.txt'), 'utf8');
  rmSync(join(templates, 'NOTES.txt'));
  writeFileSync(join(templates, '_notes.tpl'), `{{- define "test.notes" -}}\n${text}{{- end }}\n`);
  writeFileSync(
    join(templates, 'notes.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: {{ include "test.notes" . | toJson }}\n',
  );
  const result = render(dir, valuesFiles, ['--show-only', 'templates/notes.yaml']);
  expect(result.status, result.stderr).toBe(0);
  const [configMap] = parseManifests(result.manifests ?? []);
  return (configMap?.object as { data: { notes: string } } | undefined)?.data.notes ?? '';
}

describe.each([
  ['default values', [] as string[]],
  ['production-like values', [productionValues]],
])('the chart rendered with %s', (_label, valuesFiles) => {
  let objects: Located[];

  beforeAll(() => {
    objects = parseManifests(renderOk(chartDir, valuesFiles));
  });

  it('passes helm lint --strict, its values checked against values.schema.json', () => {
    const result = lint(chartDir, valuesFiles);
    expect(result.stderr).toBe('');
    expect(result.status, result.stdout).toBe(0);
    expect(result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  it('renders only objects valid against the Kubernetes 1.31 schemas, with no unknown field', () => {
    expect(objects.length).toBeGreaterThan(10);
    expect(validateAgainstSchemas(objects)).toEqual([]);
  });

  it('meets the restricted Pod Security Standard in every pod', () => {
    expect(byKind(objects, 'Deployment').length).toBeGreaterThanOrEqual(6);
    expect(restrictedViolations(objects)).toEqual([]);
  });

  it('wires Services, volumes and secret files together', () => {
    const external = valuesFiles.length > 0 ? ['loom-production-credentials', 'loom-single-sign-on'] : [];
    expect(wiringProblems(objects, external)).toEqual([]);
  });

  it('runs each of the six services in its own Deployment with gRPC health probes on its service name', () => {
    for (const [name, grpcService] of Object.entries(GRPC_SERVICE_OF)) {
      const deployment = byKind(objects, 'Deployment').find((object) => object.metadata.name === `loom-${name}`);
      const container = (deployment?.spec as { template: { spec: { containers: { args: string[]; readinessProbe: { grpc: { service: string } } }[] } } })
        .template.spec.containers[0];
      expect(container?.args.slice(0, 3)).toEqual(['serve', '--services', name]);
      expect(container?.readinessProbe.grpc.service).toBe(grpcService);
    }
  });

  it('renders NOTES.txt naming the release', () => {
    const text = notes(valuesFiles);
    expect(text).toContain('release loom in namespace knowledge');
    expect(text).toContain('kubectl -n knowledge get pods -l app.kubernetes.io/instance=loom');
    expect(text).toContain("Messages go through the chart's NATS with JetStream");
  });
});

describe('the production-like values', () => {
  it('run two schedulers on PostgreSQL, three executors, keys from the existing Secret, SSO settings for Neo4j', () => {
    const objects = parseManifests(renderOk(chartDir, [productionValues]));
    const deployment = (name: string) =>
      byKind(objects, 'Deployment').find((object) => object.metadata.name === `loom-${name}`) as unknown as {
        spec: {
          replicas: number;
          template: { spec: { containers: { env: { name: string; value: string }[] }[]; volumes: { name: string; secret?: { secretName: string } }[] } };
        };
      };
    expect(deployment('scheduler').spec.replicas).toBe(2);
    expect(deployment('executor').spec.replicas).toBe(3);
    const schedulerEnv = deployment('scheduler').spec.template.spec.containers[0]?.env.map((variable) => variable.name);
    expect(schedulerEnv).toContain('LOOM_SCHEDULER_DATABASE_URL_FILE');
    expect(deployment('skill-gateway').spec.template.spec.containers[0]?.env).toContainEqual({
      name: 'LOOM_SKILLS_DATABASE_URL_FILE',
      value: '/run/secrets/loom/database-url',
    });
    // the chart's skill services, registered at start under their names, at their Services
    const registrations = deployment('skill-gateway').spec.template.spec.containers[0]?.env.filter((variable) =>
      variable.name.startsWith('LOOM_SKILLS_REGISTER_'),
    );
    expect(Object.fromEntries(registrations?.map((variable) => [variable.name, JSON.parse(variable.value) as unknown]) ?? [])).toEqual({
      LOOM_SKILLS_REGISTER_ANNOTATION: {
        capability: 'ENTITY_EXTRACTION',
        url: 'http://loom-skill-annotation:8085/v2/annotate',
        pipeline: 'default',
        version: 'v2',
      },
      LOOM_SKILLS_REGISTER_KEYWORDS: { capability: 'KEYWORD_EXTRACTION', url: 'http://loom-skill-keywords:8086/extractKeywords' },
      LOOM_SKILLS_REGISTER_PDF: { capability: 'PDF_PARSING', url: 'http://loom-skill-pdf:8089/parse' },
      LOOM_SKILLS_REGISTER_WEBDATA: { capability: 'WEB_DATA_EXTRACTION', url: 'http://loom-skill-webdata:8000/extract' },
    });
    const webData = byKind(objects, 'Deployment').find((object) => object.metadata.name === 'loom-skill-webdata') as unknown as {
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    };
    expect(webData.spec.template.spec.containers[0]?.args).toEqual(['skills', 'serve', '--only', 'web-data']);
    expect(deployment('secrets').spec.template.spec.containers[0]?.env).toContainEqual({
      name: 'LOOM_SECRETS_KEYS_K2_FILE',
      value: '/run/secrets/loom/encryption-key',
    });
    expect(deployment('secrets').spec.template.spec.containers[0]?.env).toContainEqual({
      name: 'LOOM_SECRETS_KEYS_K1_FILE',
      value: '/run/secrets/loom/encryption-key-k1',
    });
    expect(deployment('secrets').spec.template.spec.volumes.find((volume) => volume.name === 'secrets')?.secret?.secretName).toBe(
      'loom-production-credentials',
    );
    expect(byKind(objects, 'Secret')).toEqual([]);
    // only the secrets service holds the encryption key
    const holders = byKind(objects, 'Deployment')
      .filter((object) => JSON.stringify(object).includes('encryption-key'))
      .map((object) => object.metadata.name);
    expect(holders).toEqual(['loom-secrets']);
    const sso = byKind(objects, 'ConfigMap').find((object) => object.metadata.name === 'loom-neo4j-sso') as unknown as { data: Record<string, string> };
    expect(sso.data['neo4j.conf']).toBe(
      'dbms.security.authentication_providers=plugin-keycloak-sso,native\ndbms.security.authorization_providers=plugin-keycloak-sso,native\n',
    );
  });

  it('sign operators in on every service and give the executor alone the graph single sign-on settings', () => {
    const objects = parseManifests(renderOk(chartDir, [productionValues]));
    type Pod = {
      containers: { env: { name: string; value: string }[] }[];
      volumes: { name: string; secret?: { secretName: string; items: { key: string }[] } }[];
    };
    const loomDeployments = byKind(objects, 'Deployment').filter((object) => JSON.stringify(object).includes('"serve","--services"'));
    const pods = Object.fromEntries(loomDeployments.map((object) => [object.metadata.name, (object.spec as { template: { spec: Pod } }).template.spec]));
    // the six services and the console (which checks sign-ins as they do)
    expect(Object.keys(pods)).toHaveLength(7);
    expect(pods['loom-console']?.containers[0]?.env).toContainEqual({ name: 'LOOM_CONSOLE_PUBLICURL', value: 'https://loom.example.com' });
    for (const [name, pod] of Object.entries(pods)) {
      const env = Object.fromEntries(pod.containers[0]?.env.map((variable) => [variable.name, variable.value]) ?? []);
      expect(env.LOOM_AUTH_OIDC_CONFIGFILE, name).toBe('/run/secrets/loom-sso/loom-oidc-client.json');
      expect(env.LOOM_AUTH_OIDC_ROLEPREFIX, name).toBe('loom_');
      const items = pod.volumes.find((volume) => volume.name === 'single-sign-on')?.secret?.items.map((item) => item.key);
      if (name === 'loom-executor') {
        expect(env).toMatchObject({
          LOOM_GRAPH_SSO_PROVIDERCONFIGFILE: '/run/secrets/loom-sso/neo4j-oidc-client.json',
          LOOM_GRAPH_SSO_URI: 'neo4j+s://graph.example.com:7687',
          LOOM_GRAPH_SSO_MODE: 'impersonate',
          LOOM_GRAPH_SSO_USER: 'loom_sso',
          LOOM_GRAPH_SSO_PASSWORD_FILE: '/run/secrets/loom-sso/neo4j-sso-password',
        });
        expect(items).toEqual(['loom-oidc-client.json', 'neo4j-oidc-client.json', 'neo4j-sso-password']);
      } else {
        expect(
          Object.keys(env).filter((key) => key.startsWith('LOOM_GRAPH_SSO_')),
          name,
        ).toEqual([]);
        expect(items, name).toEqual(['loom-oidc-client.json']);
      }
    }
  });

  it('the default values generate keys and tokens into a Secret kept on uninstall', () => {
    const objects = parseManifests(renderOk(chartDir));
    const [secret] = byKind(objects, 'Secret') as (KubeObject & { data: Record<string, string> })[];
    expect(secret?.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    expect(Buffer.from(Buffer.from(secret?.data['encryption-key'] ?? '', 'base64').toString(), 'base64')).toHaveLength(32);
    expect(Object.keys(secret?.data ?? {}).sort()).toEqual([
      'encryption-key',
      'nats-auth.conf',
      'nats-token',
      'token-config-store',
      'token-executor',
      'token-operator',
      'token-scheduler',
      'token-secrets',
      'token-skill-gateway',
    ]);
  });
});

describe('several executors', () => {
  type Workload = {
    spec: {
      replicas: number;
      strategy?: { type: string };
      template: {
        spec: {
          volumes: { name: string; emptyDir?: unknown; persistentVolumeClaim?: unknown }[];
          containers: { env: { name: string; valueFrom?: unknown }[] }[];
        };
      };
    };
  };
  const executorOf = (objects: readonly Located[]): Workload =>
    byKind(objects, 'Deployment').find((object) => object.metadata.name === 'loom-executor') as unknown as Workload;

  it('run with the chart NATS and no volume, evicted one at a time by a PodDisruptionBudget', () => {
    const objects = parseManifests(renderOk(chartDir, [valuesFile('services:\n  executor:\n    replicas: 3\n    persistence:\n      enabled: false\n')]));
    const executor = executorOf(objects);
    expect(executor.spec.replicas).toBe(3);
    // each executor is named after its pod among those sharing workflows (loom.executor.id)
    expect(executor.spec.template.spec.containers[0]?.env).toContainEqual({
      name: 'LOOM_EXECUTOR_ID',
      valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
    });
    // no Recreate: a rolling update keeps executors running, which a shared workflow needs
    expect(executor.spec.strategy).toBeUndefined();
    expect(executor.spec.template.spec.volumes.find((volume) => volume.name === 'data')).toEqual({ name: 'data', emptyDir: {} });
    expect(byKind(objects, 'PersistentVolumeClaim').map((claim) => claim.metadata.name)).not.toContain('loom-executor-data');
    const budgets = byKind(objects, 'PodDisruptionBudget');
    expect(budgets.map((budget) => [budget.metadata.name, budget.spec])).toEqual([
      [
        'loom-executor',
        {
          maxUnavailable: 1,
          selector: { matchLabels: { 'app.kubernetes.io/name': 'loom', 'app.kubernetes.io/instance': 'loom', 'app.kubernetes.io/component': 'executor' } },
        },
      ],
    ]);
    expect(validateAgainstSchemas(objects)).toEqual([]);
    expect(wiringProblems(objects)).toEqual([]);
    expect(notes([valuesFile('services:\n  executor:\n    replicas: 3\n    persistence:\n      enabled: false\n')])).toContain(
      '3 executors share every started workflow',
    );
  });

  it('run with an external NATS', () => {
    const objects = parseManifests(
      renderOk(chartDir, [
        valuesFile(
          'services:\n  executor:\n    replicas: 2\n    persistence:\n      enabled: false\nnats:\n  enabled: false\nmessaging:\n  nats:\n    servers: nats://nats.example:4222\n',
        ),
      ]),
    );
    expect(executorOf(objects).spec.replicas).toBe(2);
    expect(byKind(objects, 'PodDisruptionBudget').map((budget) => budget.metadata.name)).toEqual(['loom-executor']);
  });

  it('one executor (the default) has its volume, no PodDisruptionBudget', () => {
    const objects = parseManifests(renderOk(chartDir));
    expect(executorOf(objects).spec.strategy).toEqual({ type: 'Recreate' });
    expect(byKind(objects, 'PodDisruptionBudget')).toEqual([]);
  });
});

describe('each check fails on a deliberately broken chart or values file', () => {
  it('values.schema.json refuses two executors without messaging or with a volume, naming the setting, and so do the templates', () => {
    const withoutMessaging = valuesFile('services:\n  executor:\n    replicas: 2\n    persistence:\n      enabled: false\nnats:\n  enabled: false\n');
    const result = render(chartDir, [withoutMessaging]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain("values don't meet the specifications of the schema(s)");
    expect(result.stderr).toMatch(/at '\/messaging\/nats\/servers': minLength: got 0, want 1/);
    const unchecked = render(chartDir, [withoutMessaging], ['--skip-schema-validation']);
    expect(unchecked.status).not.toBe(0);
    expect(unchecked.stderr).toContain('services.executor.replicas > 1 needs messaging: nats.enabled, or an external NATS in messaging.nats.servers');

    // the chart's NATS is on by default; the executor's volume is not for two
    const withVolume = valuesFile('services:\n  executor:\n    replicas: 2\n');
    const refused = render(chartDir, [withVolume]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/at '\/services\/executor\/persistence\/enabled': value must be false/);
    expect(refused.stderr).not.toContain('/messaging/nats/servers');
    const uncheckedVolume = render(chartDir, [withVolume], ['--skip-schema-validation']);
    expect(uncheckedVolume.status).not.toBe(0);
    expect(uncheckedVolume.stderr).toContain('services.executor.replicas > 1 needs services.executor.persistence.enabled false');
  });

  it('a PodDisruptionBudget that selects no workload is found', () => {
    const broken = brokenChart(
      (text) => text.replace('"component" "executor") | nindent 6', '"component" "executors") | nindent 6'),
      'poddisruptionbudgets.yaml',
    );
    const objects = parseManifests(renderOk(broken, [productionValues]));
    expect(wiringProblems(objects, ['loom-production-credentials', 'loom-single-sign-on'])).toEqual([
      'loom/templates/poddisruptionbudgets.yaml PodDisruptionBudget/loom-executor: selects 0 workloads',
    ]);
  });

  it('values.schema.json refuses two schedulers without PostgreSQL, and so does the template', () => {
    const file = valuesFile('services:\n  scheduler:\n    replicas: 2\n');
    const result = render(chartDir, [file]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/at '\/database\/enabled': value must be true/);
    // the template refuses it too, for an install that skips the schema
    const unchecked = render(chartDir, [file], ['--skip-schema-validation']);
    expect(unchecked.status).not.toBe(0);
    expect(unchecked.stderr).toContain('services.scheduler.replicas > 1 needs database.enabled');
  });

  it('values.schema.json and the templates refuse single sign-on without its Secret', () => {
    const file = valuesFile('singleSignOn:\n  graph:\n    enabled: true\n');
    const unchecked = render(chartDir, [file], ['--skip-schema-validation']);
    expect(unchecked.status).not.toBe(0);
    expect(unchecked.stderr).toContain('singleSignOn.existingSecret is required');
    const result = render(chartDir, [valuesFile('singleSignOn:\n  existingSecret: ""\n  operators:\n    enabled: true\n')]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/at '\/singleSignOn\/existingSecret': minLength: got 0, want 1/);
  });

  it('a template error stops helm template and helm lint with the template named', () => {
    const broken = brokenChart(
      (text) =>
        text.replace(
          '{{- range $name, $_ := include "loom.topology" . | fromYaml }}',
          '{{- range $name, $_ := include "loom.topology" . | fromYaml }}{{ .Values.nope.deeper }',
        ),
      'services.yaml',
    );
    const result = render(broken);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('loom/templates/services.yaml');
    const linted = lint(broken);
    expect(linted.status).not.toBe(0);
    expect(linted.stdout).toContain('templates/services.yaml');
  });

  it('an unknown field in a container is named', () => {
    const broken = brokenChart(
      (text) =>
        text.replace(
          '          securityContext:\n            allowPrivilegeEscalation: false',
          '          securityContxt:\n            allowPrivilegeEscalation: false',
        ),
      'deployments.yaml',
    );
    const problems = validateAgainstSchemas(parseManifests(renderOk(broken)));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toContain(`'"securityContxt"' does not exist in type 'IContainer'`);
  });

  it('a field of the wrong type is named', () => {
    const broken = brokenChart(
      (text) => text.replace('containerPort: {{ $root.Values.grpcPort }}', 'containerPort: "{{ $root.Values.grpcPort }}"'),
      'deployments.yaml',
    );
    const problems = validateAgainstSchemas(parseManifests(renderOk(broken)));
    expect(problems.some((problem) => problem.includes('containerPort must be integer'))).toBe(true);
  });

  it('a privileged container, a kept capability and a hostPath volume break the restricted standard', () => {
    const broken = brokenChart(
      (text) =>
        text
          .replace('allowPrivilegeEscalation: false', 'allowPrivilegeEscalation: true\n            privileged: true')
          .replace('drop: ["ALL"]', 'add: ["SYS_ADMIN"]')
          .replace('        - name: tmp\n          emptyDir:', '        - name: tmp\n          hostPath:\n            path: /tmp\n          emptyDir:'),
      'deployments.yaml',
    );
    const problems = restrictedViolations(parseManifests(renderOk(broken)));
    const executor = problems.filter((problem) => problem.includes('Deployment/loom-executor'));
    expect(executor).toEqual(
      expect.arrayContaining([
        expect.stringContaining('privileged must not be true'),
        expect.stringContaining('allowPrivilegeEscalation must be false'),
        expect.stringContaining('capabilities must drop ALL'),
        expect.stringContaining('capability SYS_ADMIN may not be added'),
        expect.stringContaining('volume tmp of type hostPath is not allowed'),
      ]),
    );
  });

  it('a secret file no volume provides is found', () => {
    const broken = brokenChart(
      (text) => text.replace('value: /run/secrets/loom/encryption-key', 'value: /run/secrets/loom/encryption-keys'),
      'deployments.yaml',
    );
    const problems = wiringProblems(parseManifests(renderOk(broken)));
    expect(problems).toContain(
      'templates/deployments.yaml Deployment/loom-secrets: LOOM_SECRETS_KEYS_K1_FILE=/run/secrets/loom/encryption-keys is not a mounted secret item'.replace(
        /^/,
        'loom/',
      ),
    );
  });
});
