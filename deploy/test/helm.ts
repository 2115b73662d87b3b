import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { type KubeObject, type Located } from './kubernetes.js';
import { deployDir, helmCommand, run, scratchDir } from './tools.js';

/** deploy/helm/loom. */
export const chartDir = join(deployDir, 'helm', 'loom');
/** The chart's production-like values file. */
export const productionValues = join(chartDir, 'ci', 'production-values.yaml');
/** The Kubernetes version the templates see: that of kubernetes-models' schemas the objects are validated against. */
const kubeVersion = '1.31.0';
const release = ['loom', '--namespace', 'knowledge'];

const helm = helmCommand();

/** Runs helm on the chart; a missing helm fails here with a message naming `npm test` and scripts/test-env/helm.mjs. */
export function runHelm(args: readonly string[]): ReturnType<typeof run> {
  return run(helm, args, { timeoutMs: 60_000 });
}

/** One rendered template document. */
export type Manifest = { source: string; content: string };

/** Splits `helm template` output into its documents, each named by its `# Source:` line. */
function splitRendered(stdout: string): Manifest[] {
  const manifests: Manifest[] = [];
  for (const document of stdout.split(/^---$/m)) {
    const match = /^# Source: (.+)$/m.exec(document);
    if (match !== null) manifests.push({ source: match[1] as string, content: document });
    else if (document.trim() !== '') throw new Error(`helm template printed a document without a # Source line: ${document.slice(0, 200)}`);
  }
  return manifests;
}

const valuesArgs = (valuesFiles: readonly string[]): string[] => valuesFiles.flatMap((file) => ['-f', file]);

/** `helm template`: the chart's values checked against values.schema.json, then its templates rendered. */
export function render(
  chart: string,
  valuesFiles: readonly string[] = [],
  extra: readonly string[] = [],
): { status: number | null; manifests?: Manifest[]; stderr: string } {
  const result = runHelm(['template', ...release, chart, '--kube-version', kubeVersion, ...valuesArgs(valuesFiles), ...extra]);
  return result.status === 0 ? { status: 0, manifests: splitRendered(result.stdout), stderr: result.stderr } : { status: result.status, stderr: result.stderr };
}

export function renderOk(chart: string, valuesFiles: readonly string[] = []): Manifest[] {
  const result = render(chart, valuesFiles);
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return result.manifests as Manifest[];
}

/** `helm lint --strict`: chart metadata, values against values.schema.json, templates rendered and parsed as YAML. */
export function lint(chart: string, valuesFiles: readonly string[] = []): ReturnType<typeof run> {
  return runHelm(['lint', '--strict', chart, '--namespace', 'knowledge', '--kube-version', kubeVersion, ...valuesArgs(valuesFiles)]);
}

/** A values file holding `text`. */
export function valuesFile(text: string): string {
  const file = join(scratchDir('values'), 'values.yaml');
  writeFileSync(file, text);
  return file;
}

/** The rendered objects of one kind. */
export const byKind = (objects: readonly Located[], kind: string): KubeObject[] =>
  objects.filter(({ object }) => object.kind === kind).map(({ object }) => object);

/** A copy of the chart with one template changed. */
export function brokenChart(change: (text: string) => string, template: string): string {
  const dir = join(scratchDir('chart'), 'loom');
  cpSync(chartDir, dir, { recursive: true });
  const file = join(dir, 'templates', template);
  const text = readFileSync(file, 'utf8');
  const changed = change(text);
  expect(changed).not.toBe(text);
  writeFileSync(file, changed);
  return dir;
}
