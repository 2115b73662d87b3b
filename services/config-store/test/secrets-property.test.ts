import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPONENT_KINDS, componentInstance, findResourceDefinition, RESOURCE_KINDS, type ResourceInstance, type WorkflowConfiguration } from '@loom/domain';
import { workflowToProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit';
import { startTelemetry, type Telemetry } from '@loom/telemetry';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Scratch, scratch, startStore, storedFiles, type StoreHarness } from './harness.js';

/** How a credential gets into the workflow: typed in clear, or as `$$VAR` of an encrypted or a plain variable. */
type How = 'typed' | 'encrypted' | 'plain';
interface Credential {
  readonly how: How;
  readonly secret: string;
}

// distinctive (so that no innocent text matches), with characters JSON escapes and one it does not
const secretArb = fc
  .string({ unit: fc.constantFrom(...'abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"\\{}:, é€-_'.split('')), minLength: 10, maxLength: 24 })
  .map((tail) => `cr3d-${tail}`);
const credentialArb = (hows: readonly How[]): fc.Arbitrary<Credential> => fc.record({ how: fc.constantFrom(...hows), secret: secretArb });

/** A graph resource of either kind: the PASSWORD parameter in every form, and maybe the user as an encrypted variable. */
const resourceArb = fc.record({
  kind: fc.constantFrom(RESOURCE_KINDS.NEO4J_DATABASE, RESOURCE_KINDS.AGE_DATABASE),
  password: credentialArb(['typed', 'encrypted', 'plain']),
  user: fc.option(credentialArb(['encrypted']), { nil: undefined }),
});

/** Enricher headers, as an object or as its JSON text: credential names in every form, other names as encrypted variables. */
const headersArb = fc.record({
  asText: fc.boolean(),
  entries: fc.uniqueArray(
    fc.oneof(
      fc.record({
        name: fc.constantFrom('Authorization', 'x-api-key', 'Cookie', 'x-auth-token', 'proxy-authorization'),
        credential: credentialArb(['typed', 'encrypted', 'plain']),
      }),
      fc.record({ name: fc.constantFrom('x-tenant', 'x-region'), credential: credentialArb(['encrypted']) }),
    ),
    { selector: (entry) => entry.name.toLowerCase(), minLength: 1, maxLength: 4 },
  ),
});

const workflowArb = fc.record({
  resources: fc.array(resourceArb, { maxLength: 2 }),
  workflowResources: fc.array(resourceArb, { maxLength: 2 }),
  writerResource: fc.option(resourceArb, { nil: undefined }),
  enrichers: fc.array(headersArb, { maxLength: 2 }),
});
type Generated = typeof workflowArb extends fc.Arbitrary<infer T> ? T : never;

const id = (run: number, index: number): string => `${String(run).padStart(8, '0')}-0000-4000-8000-${String(index).padStart(12, '0')}`;

describe('no credential in clear after a push, wherever a workflow holds it', () => {
  const dirs: Scratch = scratch();
  const spans = new InMemorySpanExporter();
  let telemetry: Telemetry;
  let harness: StoreHarness;

  beforeAll(async () => {
    telemetry = startTelemetry({ serviceName: 'secrets-property-test', spanProcessors: [new SimpleSpanProcessor(spans)] });
    harness = await startStore(dirs);
  });
  afterAll(async () => {
    await harness.stop();
    await telemetry.shutdown();
  });

  it('seals every credential: none in any stored file, log line or span', { timeout: 300_000 }, async () => {
    let run = 0;
    const all: string[] = [];
    await fc.assert(
      fc.asyncProperty(workflowArb, async (generated: Generated) => {
        run++;
        let variables = 0;
        const credentials: string[] = [];
        /** The value to write for a credential: itself, or a reference to a new variable holding it. */
        const place = async (credential: Credential): Promise<string> => {
          credentials.push(credential.secret);
          if (credential.how === 'typed') return credential.secret;
          const key = `V_${run}_${variables++}`;
          await call(harness.secrets, 'createVariable', { key, value: credential.secret, encrypted: credential.how === 'encrypted', userUuid: '' });
          return `$$${key}`;
        };
        const resourceOf = async (resource: Generated['resources'][number], index: number): Promise<ResourceInstance> => {
          const parameters: Record<string, unknown> = {
            host: 'graph.internal',
            user: resource.user === undefined ? 'loom' : await place(resource.user),
            password: await place(resource.password),
            ...(resource.kind === RESOURCE_KINDS.AGE_DATABASE ? { graph: 'knowledge' } : {}),
          };
          const definition = findResourceDefinition(resource.kind);
          if (definition === undefined) throw new TypeError(`no resource kind ${resource.kind}`);
          return { name: `Graph ${index}_${id(run, 100 + index)}`, resource: definition, parameters };
        };

        const inlet = componentInstance(COMPONENT_KINDS.INLET, `In_${id(run, 1)}`);
        const sink = componentInstance(COMPONENT_KINDS.LOGGER, `Log_${id(run, 2)}`);
        const components = [inlet, sink];
        const links = [];
        for (const [index, headers] of generated.enrichers.entries()) {
          const values: Record<string, string> = {};
          for (const entry of headers.entries) values[entry.name] = await place(entry.credential);
          const enricher = componentInstance(COMPONENT_KINDS.HTTP_ENRICHER, `Call ${index}_${id(run, 10 + index)}`, {
            url: 'http://prices.internal/{sku}',
            headers: headers.asText ? JSON.stringify(values) : values,
          });
          components.push(enricher);
          links.push({ from: inlet.name, to: enricher.name }, { from: enricher.name, to: sink.name });
        }
        if (generated.writerResource !== undefined) {
          const writer = componentInstance(COMPONENT_KINDS.GRAPH_DATABASE_WRITER, `Writer_${id(run, 20)}`, { query: 'MERGE (a:Article {id: $id})' });
          writer.resource = await resourceOf(generated.writerResource, 0);
          components.push(writer);
          // the logger is linked too: push refuses a component no source reaches
          links.push({ from: inlet.name, to: writer.name }, { from: writer.name, to: sink.name });
        }
        if (links.length === 0) links.push({ from: inlet.name, to: sink.name });
        const workflow: WorkflowConfiguration = {
          name: `Generated ${run}_${id(run, 0)}`,
          autoStart: false,
          components,
          links,
          resources: await Promise.all(generated.resources.map((resource, index) => resourceOf(resource, 1 + index))),
          skills: [],
          workflowResources: await Promise.all(generated.workflowResources.map((resource, index) => resourceOf(resource, 10 + index))),
        };
        await call(harness.store, 'putWorkflow', { workflow: workflowToProto(workflow), expectedVersion: undefined });

        const stored = readFileSync(join(dirs.workflows, `${workflow.name}.workflow.json`), 'utf8');
        // every credential is in its slot, sealed: as many sealed values as credentials placed
        expect(stored.match(/###AES-/g)?.length ?? 0).toBe(credentials.length);
        all.push(...credentials);
      }),
      { numRuns: 25, seed: 20261123 },
    );

    expect(all.length).toBeGreaterThan(25);
    // kept versions (.history) too
    const files = storedFiles(dirs.workflows).map((file) => readFileSync(join(dirs.workflows, file), 'utf8'));
    const texts = {
      'a stored file': files.join('\n'),
      'the audit log': readFileSync(dirs.auditLog, 'utf8'),
      'a log line': harness.logLines.join('\n'),
      'a span': JSON.stringify(
        spans.getFinishedSpans().map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status })),
      ),
    };
    for (const [where, text] of Object.entries(texts)) {
      const found = all.filter((secret) => text.includes(secret) || text.includes(JSON.stringify(secret).slice(1, -1)));
      expect(found, `credentials in clear in ${where}`).toEqual([]);
    }
    expect(spans.getFinishedSpans().length).toBeGreaterThan(0);
  });
});
