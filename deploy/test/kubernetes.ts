import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { ConfigMap, PersistentVolumeClaim, Secret, Service } from 'kubernetes-models/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { parseAllDocuments } from 'yaml';
import { deployDir, scratchDir } from './tools.js';

/** A rendered Kubernetes object, as parsed from the chart's output. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** Where an object came from, for messages: `loom/templates/x.yaml#2 Deployment/loom-executor`. */
export interface Located {
  readonly source: string;
  readonly object: KubeObject;
}

/** Parses the YAML documents of rendered templates; a document that is not YAML is an error naming its template. */
export function parseManifests(manifests: readonly { source: string; content: string }[]): Located[] {
  const objects: Located[] = [];
  for (const { source, content } of manifests) {
    for (const [index, document] of parseAllDocuments(content).entries()) {
      if (document.errors.length > 0) throw new Error(`${source} document ${index}: ${document.errors.map((error) => error.message).join('; ')}`);
      const object = document.toJS() as KubeObject | null;
      if (object !== null) objects.push({ source, object });
    }
  }
  return objects;
}

/** The kubernetes-models class of each kind the chart renders (their schemas are those of Kubernetes 1.31). */
const models = {
  'v1/ConfigMap': { model: ConfigMap, type: 'IConfigMap', module: 'kubernetes-models/v1/ConfigMap' },
  'v1/Secret': { model: Secret, type: 'ISecret', module: 'kubernetes-models/v1/Secret' },
  'v1/Service': { model: Service, type: 'IService', module: 'kubernetes-models/v1/Service' },
  'v1/PersistentVolumeClaim': { model: PersistentVolumeClaim, type: 'IPersistentVolumeClaim', module: 'kubernetes-models/v1/PersistentVolumeClaim' },
  'apps/v1/Deployment': { model: Deployment, type: 'IDeployment', module: 'kubernetes-models/apps/v1/Deployment' },
  'apps/v1/StatefulSet': { model: StatefulSet, type: 'IStatefulSet', module: 'kubernetes-models/apps/v1/StatefulSet' },
  'networking.k8s.io/v1/NetworkPolicy': { model: NetworkPolicy, type: 'INetworkPolicy', module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy' },
  'networking.k8s.io/v1/Ingress': { model: Ingress, type: 'IIngress', module: 'kubernetes-models/networking.k8s.io/v1/Ingress' },
  'policy/v1/PodDisruptionBudget': { model: PodDisruptionBudget, type: 'IPodDisruptionBudget', module: 'kubernetes-models/policy/v1/PodDisruptionBudget' },
} as const;

const describe = ({ source, object }: Located): string => `${source} ${object.kind}/${object.metadata?.name}`;

/**
 * Validates objects against the Kubernetes OpenAPI schemas (kubernetes-models: types, required
 * fields, enums, formats), and rejects fields that do not exist — the schemas allow any extra
 * field, so the objects are also type-checked by TypeScript against the same models' types,
 * whose excess-property check names every unknown field. Returns one message per problem.
 */
export function validateAgainstSchemas(objects: readonly Located[]): string[] {
  const problems: string[] = [];
  const typed: { located: Located; entry: (typeof models)[keyof typeof models] }[] = [];
  for (const located of objects) {
    const { object } = located;
    const entry = models[`${object.apiVersion}/${object.kind}` as keyof typeof models];
    if (entry === undefined) {
      problems.push(`${describe(located)}: no schema for ${object.apiVersion} ${object.kind}`);
      continue;
    }
    typed.push({ located, entry });
    try {
      new entry.model(object).validate();
    } catch (error) {
      problems.push(`${describe(located)}: ${(error as Error).message}`);
    }
  }
  problems.push(...unknownFields(typed));
  return problems;
}

/** Type-checks each object literal against its model's interface; excess properties are unknown fields. */
function unknownFields(typed: readonly { located: Located; entry: (typeof models)[keyof typeof models] }[]): string[] {
  const dir = scratchDir('k8s-types');
  const imports = [...new Set(typed.map(({ entry }) => `import type { ${entry.type} } from '${entry.module}';`))];
  const declarations = typed.map(({ entry, located }, index) => `export const o${index}: ${entry.type} = ${JSON.stringify(located.object)};`);
  const file = join(dir, 'objects.ts');
  writeFileSync(file, [...imports, ...declarations].join('\n'));
  // the file lies outside the repository: kubernetes-models is mapped to where deploy/ has it
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    baseUrl: dir,
    paths: { 'kubernetes-models/*': [join(modelsRoot(), '*')] },
    types: [],
  });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const index = diagnostic.file?.text.slice(0, diagnostic.start).split('\n').length ?? 0;
    const located = typed[index - imports.length - 1]?.located;
    const where = located === undefined ? 'objects' : describe(located);
    return `${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
  });
}

function modelsRoot(): string {
  return dirname(createRequire(join(deployDir, 'package.json')).resolve('kubernetes-models'));
}

/** The pod template of a workload, if it has one. */
function podSpecOf(object: KubeObject): Record<string, unknown> | undefined {
  const spec = object.spec as { template?: { spec?: Record<string, unknown> } } | undefined;
  return spec?.template?.spec;
}

interface SecurityContext {
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  runAsNonRoot?: boolean;
  runAsUser?: number;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type?: string };
  procMount?: string;
  appArmorProfile?: { type?: string };
  seLinuxOptions?: { type?: string };
  windowsOptions?: { hostProcess?: boolean };
}

interface Container {
  name: string;
  securityContext?: SecurityContext;
  ports?: { hostPort?: number }[];
}

const RESTRICTED_VOLUME_TYPES = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret']);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);

/**
 * Checks every pod template against the Kubernetes "restricted" Pod Security Standard (its
 * baseline and restricted controls, version latest as of Kubernetes 1.31). Returns one message
 * per violated control.
 */
export function restrictedViolations(objects: readonly Located[]): string[] {
  const problems: string[] = [];
  for (const located of objects) {
    const pod = podSpecOf(located.object);
    if (pod === undefined) continue;
    const where = describe(located);
    const podContext = (pod.securityContext ?? {}) as SecurityContext & { sysctls?: { name: string }[] };
    const containers = [
      ...((pod.initContainers ?? []) as Container[]),
      ...((pod.containers ?? []) as Container[]),
      ...((pod.ephemeralContainers ?? []) as Container[]),
    ];
    for (const field of ['hostNetwork', 'hostPID', 'hostIPC']) if (pod[field] === true) problems.push(`${where}: ${field} must not be true`);
    if (podContext.windowsOptions?.hostProcess === true) problems.push(`${where}: hostProcess must not be true`);
    for (const volume of (pod.volumes ?? []) as Record<string, unknown>[]) {
      const type = Object.keys(volume).find((key) => key !== 'name');
      if (type === undefined || !RESTRICTED_VOLUME_TYPES.has(type))
        problems.push(`${where}: volume ${String(volume.name)} of type ${type} is not allowed (restricted volume types)`);
    }
    for (const sysctl of podContext.sysctls ?? []) if (!SAFE_SYSCTLS.has(sysctl.name)) problems.push(`${where}: sysctl ${sysctl.name} is not in the safe set`);
    const podSeccomp = podContext.seccompProfile?.type;
    if (podContext.runAsUser === 0) problems.push(`${where}: pod runAsUser must not be 0`);
    if (podContext.appArmorProfile?.type === 'Unconfined') problems.push(`${where}: pod AppArmor profile must not be Unconfined`);
    if (!SELINUX_TYPES.has(podContext.seLinuxOptions?.type ?? ''))
      problems.push(`${where}: pod SELinux type ${podContext.seLinuxOptions?.type} is not allowed`);
    if (podSeccomp !== undefined && podSeccomp !== 'RuntimeDefault' && podSeccomp !== 'Localhost')
      problems.push(`${where}: pod seccompProfile.type must be RuntimeDefault or Localhost`);
    for (const container of containers) {
      const at = `${where} container ${container.name}`;
      const context = container.securityContext ?? {};
      if (context.privileged === true) problems.push(`${at}: privileged must not be true`);
      if (context.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation must be false`);
      if (context.runAsNonRoot === false || (context.runAsNonRoot !== true && podContext.runAsNonRoot !== true))
        problems.push(`${at}: runAsNonRoot must be true (pod or container)`);
      if (context.runAsUser === 0) problems.push(`${at}: runAsUser must not be 0`);
      const seccomp = context.seccompProfile?.type ?? podSeccomp;
      if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost')
        problems.push(`${at}: seccompProfile.type must be RuntimeDefault or Localhost (pod or container)`);
      if (!(context.capabilities?.drop ?? []).includes('ALL')) problems.push(`${at}: capabilities must drop ALL`);
      for (const added of context.capabilities?.add ?? []) if (added !== 'NET_BIND_SERVICE') problems.push(`${at}: capability ${added} may not be added`);
      if (context.procMount !== undefined && context.procMount !== 'Default') problems.push(`${at}: procMount must be Default`);
      if (context.appArmorProfile?.type === 'Unconfined') problems.push(`${at}: AppArmor profile must not be Unconfined`);
      if (!SELINUX_TYPES.has(context.seLinuxOptions?.type ?? '')) problems.push(`${at}: SELinux type ${context.seLinuxOptions?.type} is not allowed`);
      for (const port of container.ports ?? []) if (port.hostPort !== undefined && port.hostPort !== 0) problems.push(`${at}: hostPort must not be set`);
    }
  }
  return problems;
}

/**
 * Checks what the objects say about each other: a Service, and a PodDisruptionBudget, selects the pods of one workload
 * (Deployment or StatefulSet), a PodDisruptionBudget's workload runs more than one pod, a pod's ConfigMap, Secret and claim exist (or are the named
 * existing Secret; a StatefulSet's claim templates count), a rendered Secret holds every item a
 * pod mounts from it, every volume mount names a volume, every `*_FILE`
 * variable names a file that a mounted secret item provides, and the `--services` argument
 * matches the gRPC service its probes ask about.
 */
export function wiringProblems(objects: readonly Located[], externalSecrets: readonly string[] = []): string[] {
  const problems: string[] = [];
  const named = (kind: string) => new Set(objects.filter(({ object }) => object.kind === kind).map(({ object }) => object.metadata.name));
  const configMaps = named('ConfigMap');
  const secrets = new Set([...named('Secret'), ...externalSecrets]);
  const secretData = new Map(
    objects
      .filter(({ object }) => object.kind === 'Secret')
      .map(({ object }) => [object.metadata.name, new Set(Object.keys((object.data as Record<string, string> | undefined) ?? {}))]),
  );
  const claims = named('PersistentVolumeClaim');
  const workloads = objects.filter(({ object }) => object.kind === 'Deployment' || object.kind === 'StatefulSet');
  const selected = (selector: Record<string, string>): Located[] =>
    workloads.filter(({ object }) => {
      const labels = (object.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
      return Object.entries(selector).every(([key, value]) => labels[key] === value);
    });
  for (const located of objects.filter(({ object }) => object.kind === 'Service')) {
    const matches = selected((located.object.spec as { selector: Record<string, string> }).selector);
    if (matches.length !== 1) problems.push(`${describe(located)}: selects ${matches.length} workloads`);
  }
  for (const located of objects.filter(({ object }) => object.kind === 'PodDisruptionBudget')) {
    const matches = selected((located.object.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels);
    if (matches.length !== 1) problems.push(`${describe(located)}: selects ${matches.length} workloads`);
    // a budget over one pod would block every drain of its node
    const replicas = (matches[0]?.object.spec as { replicas?: number } | undefined)?.replicas ?? 1;
    if (matches.length === 1 && replicas < 2) problems.push(`${describe(located)}: guards a workload of ${replicas} pod`);
  }
  for (const located of workloads) {
    const pod = podSpecOf(located.object) as {
      volumes: {
        name: string;
        configMap?: { name: string };
        secret?: { secretName: string; items?: { key: string; path: string }[] };
        persistentVolumeClaim?: { claimName: string };
      }[];
      containers: { env?: { name: string; value?: string }[]; volumeMounts?: { name: string; mountPath: string }[] }[];
    };
    const where = describe(located);
    const files = new Set<string>();
    for (const volume of pod.volumes) {
      if (volume.configMap !== undefined && !configMaps.has(volume.configMap.name))
        problems.push(`${where}: ConfigMap ${volume.configMap.name} does not exist`);
      if (volume.secret !== undefined && !secrets.has(volume.secret.secretName)) problems.push(`${where}: Secret ${volume.secret.secretName} does not exist`);
      const data = volume.secret === undefined ? undefined : secretData.get(volume.secret.secretName);
      for (const item of volume.secret?.items ?? [])
        if (data !== undefined && !data.has(item.key)) problems.push(`${where}: Secret ${volume.secret?.secretName} has no item ${item.key}`);
      if (volume.persistentVolumeClaim !== undefined && !claims.has(volume.persistentVolumeClaim.claimName))
        problems.push(`${where}: claim ${volume.persistentVolumeClaim.claimName} does not exist`);
      for (const container of pod.containers) {
        const mount = container.volumeMounts?.find((candidate) => candidate.name === volume.name);
        if (mount !== undefined) for (const item of volume.secret?.items ?? []) files.add(`${mount.mountPath}/${item.path}`);
      }
    }
    const claimTemplates = ((located.object.spec as { volumeClaimTemplates?: { metadata: { name: string } }[] }).volumeClaimTemplates ?? []).map(
      (template) => template.metadata.name,
    );
    const volumeNames = new Set([...pod.volumes.map((volume) => volume.name), ...claimTemplates]);
    for (const container of pod.containers) {
      for (const mount of container.volumeMounts ?? []) if (!volumeNames.has(mount.name)) problems.push(`${where}: volume mount ${mount.name} names no volume`);
      for (const variable of container.env ?? []) {
        if ((variable.name.endsWith('_FILE') || (variable.value ?? '').startsWith('/run/secrets/')) && !files.has(variable.value ?? ''))
          problems.push(`${where}: ${variable.name}=${variable.value} is not a mounted secret item`);
      }
    }
  }
  return problems;
}
