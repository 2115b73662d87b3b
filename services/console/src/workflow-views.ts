import { status } from '@grpc/grpc-js';
import {
  type ComponentStatus,
  type ExecutorRunStatus,
  type GetWorkflowStatusResponse,
  type WatchRunResponse,
  type WorkflowState,
  workflowStateToJSON,
} from '@loom/contracts';
import { serializeCompactWorkflow, shownComponentName, type WorkflowConfiguration, workflowGraph } from '@loom/domain';
import { workflowFromProto } from '@loom/domain/proto';
import { isServiceError } from '@loom/service-kit';
import { ApiError } from './http-errors.js';
import { apiErrorOf, type LoomCalls } from './loom-calls.js';

// What the workflow pages show, composed from the config store (the file, its picture) and the executor (states and
// counts): the answers of GET /api/workflows, GET /api/workflows/{name} and the `counts` events.

/** `WORKFLOW_STATE_RUNNING` as `RUNNING`. */
export function stateName(state: WorkflowState): string {
  return workflowStateToJSON(state).replace(/^WORKFLOW_STATE_/, '');
}

/** Messages a minute in, out and failed. */
export interface Rates {
  readonly in: number;
  readonly out: number;
  readonly failed: number;
}

/** Where the messages of a workflow enter and leave it: what its in and out counts add up. */
interface Ends {
  /** Components no link leads to (its sources and inlets). */
  readonly entries: ReadonlySet<string>;
  /** Components no link leaves (its writers and sinks). */
  readonly exits: ReadonlySet<string>;
}

function endsOf(workflow: WorkflowConfiguration): Ends {
  const targets = new Set(workflow.links.map((link) => link.to));
  const sources = new Set(workflow.links.map((link) => link.from));
  const names = workflow.components.map((component) => component.name);
  return { entries: new Set(names.filter((name) => !targets.has(name))), exits: new Set(names.filter((name) => !sources.has(name))) };
}

interface Totals {
  readonly at: number;
  readonly in: number;
  readonly out: number;
  readonly failed: number;
}

/** A workflow's totals: messages into its entries, messages its exits took in and did not fail, failures anywhere. */
function totalsOf(components: readonly ComponentStatus[], ends: Ends, at: number): Totals {
  let into = 0;
  let out = 0;
  let failed = 0;
  for (const component of components) {
    if (ends.entries.has(component.name)) into += component.messagesIn;
    if (ends.exits.has(component.name)) out += Math.max(0, component.messagesIn - component.messagesFailed);
    failed += component.messagesFailed;
  }
  return { at, in: into, out, failed };
}

/** Samples older than this are dropped: a rate is taken over the last minute the console has seen. */
const RATE_WINDOW_MS = 60_000;

/**
 * Rates a minute from successive totals of each workflow (the executor keeps counters, not rates): the change since
 * the oldest sample of the last minute, or since the last look when that was longer ago. The first look at a workflow
 * has no rate yet (0); counters that went down (a new run) answer 0.
 */
export class RateTracker {
  private readonly samples = new Map<string, Totals[]>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Records the workflow's totals now and answers its rates. */
  record(workflow: string, components: readonly ComponentStatus[], ends: Ends): Rates {
    const totals = totalsOf(components, ends, this.now());
    const earlier = this.samples.get(workflow) ?? [];
    const recent = earlier.filter((sample) => totals.at - sample.at <= RATE_WINDOW_MS);
    // looked at less often than once a minute: the last look is the base
    const kept = recent.length > 0 || earlier.length === 0 ? recent : [earlier.at(-1) as Totals];
    const first = kept[0];
    kept.push(totals);
    // at most one sample a second is kept, so that a page polled often holds a bounded list
    this.samples.set(
      workflow,
      kept.filter((sample, index) => index === kept.length - 1 || (kept[index + 1] as Totals).at - sample.at >= 1000),
    );
    if (first === undefined || totals.at === first.at) return { in: 0, out: 0, failed: 0 };
    const perMinute = (now: number, then: number): number => Math.max(0, Math.round(((now - then) * 60_000) / (totals.at - first.at)));
    return { in: perMinute(totals.in, first.in), out: perMinute(totals.out, first.out), failed: perMinute(totals.failed, first.failed) };
  }

  /** Forgets workflows that are gone. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.samples.keys()) if (!names.has(name)) this.samples.delete(name);
  }
}

/** One row of the workflows page. */
export interface WorkflowRow {
  readonly name: string;
  readonly title: string;
  readonly version: number;
  readonly valid: boolean;
  readonly state: string;
  readonly executors: readonly { readonly id: string; readonly state: string }[];
  readonly rates: Rates;
  readonly lastError?: string;
}

/** At most this many status calls run at once for one listing. */
const STATUS_CONCURRENCY = 16;

/** Runs `work` over `items`, at most `limit` at a time, answering in the items' order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** The workflow views of one console: the calls they make, the rates they keep and the workflows' ends by version. */
export class WorkflowViews {
  readonly rates = new RateTracker();
  private readonly ends = new Map<string, Ends>();

  constructor(private readonly loom: LoomCalls) {}

  /** Every stored workflow with its state on each executor and its rates (GET /api/workflows). */
  async list(token: string): Promise<WorkflowRow[]> {
    const summaries = [];
    let pageToken = '';
    do {
      const page = await this.loom.unary('config-store', 'listWorkflows', { pageSize: 1000, pageToken }, token);
      summaries.push(...page.workflows);
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    this.rates.retain(new Set(summaries.map((summary) => summary.name)));
    return mapLimited(summaries, STATUS_CONCURRENCY, async (summary): Promise<WorkflowRow> => {
      const running = await this.status(summary.name, token);
      const ends = running === undefined || running.components.length === 0 ? undefined : await this.endsOf(summary.name, summary.version, token);
      return {
        name: summary.name,
        title: shownComponentName(summary.name),
        version: summary.version,
        valid: summary.valid,
        state: running === undefined ? 'STOPPED' : stateName(running.state),
        executors: (running?.executors ?? []).map((executor: ExecutorRunStatus) => ({ id: executor.executorId, state: stateName(executor.state) })),
        rates: running === undefined || ends === undefined ? { in: 0, out: 0, failed: 0 } : this.rates.record(summary.name, running.components, ends),
        ...(running?.lastError ? { lastError: running.lastError } : {}),
      };
    });
  }

  /** The executor's status of a workflow; undefined when it has never run here. */
  async status(name: string, token: string): Promise<GetWorkflowStatusResponse | undefined> {
    try {
      return await this.loom.unary('executor', 'getWorkflowStatus', { name }, token);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404 && isServiceError(error.cause) && error.cause.code === status.NOT_FOUND) return undefined;
      throw error;
    }
  }

  /** One workflow: its file in the compact form, its picture, resources and skills, its state (GET /api/workflows/{name}). */
  async detail(name: string, token: string): Promise<Record<string, unknown>> {
    const [stored, running, history] = await Promise.all([
      this.loom.unary('config-store', 'getWorkflow', { name }, token),
      this.status(name, token),
      this.history(name, token),
    ]);
    if (stored.workflow === undefined) throw new ApiError(404, `no workflow '${name}'`);
    const workflow = workflowFromProto(stored.workflow);
    const version = stored.metadata?.version ?? 0;
    this.ends.set(`${name}@${version}`, endsOf(workflow));
    const picture = workflowGraph(workflow);
    return {
      name: workflow.name,
      title: shownComponentName(workflow.name),
      version,
      sha256: stored.metadata?.sha256 ?? '',
      ...(stored.metadata?.updatedAt === undefined ? {} : { updatedAt: stored.metadata.updatedAt.toISOString() }),
      ...(stored.metadata?.pushedBy ? { pushedBy: stored.metadata.pushedBy } : {}),
      state: running === undefined ? 'STOPPED' : stateName(running.state),
      compact: serializeCompactWorkflow(workflow, 'yaml'),
      picture,
      resources: resourcesOf(workflow),
      skills: skillsOf(workflow),
      ...(running === undefined ? {} : { counts: countsEvent(running.components, running.state, picture.nodes) }),
      ...(history === undefined ? {} : { history }),
    };
  }

  /** The kept versions of a workflow, newest first; undefined when the config store keeps none (or predates history). */
  private async history(name: string, token: string): Promise<Record<string, unknown>[] | undefined> {
    try {
      const { versions } = await this.loom.unary('config-store', 'listWorkflowVersions', { name }, token);
      return versions.map((version) => ({
        version: version.version,
        sha256: version.sha256,
        ...(version.updatedAt === undefined ? {} : { updatedAt: version.updatedAt.toISOString() }),
        ...(version.pushedBy ? { pushedBy: version.pushedBy } : {}),
      }));
    } catch (error) {
      // the page shows the workflow without its history when the store cannot list it; a refusal is the same refusal
      if (error instanceof ApiError && (error.status === 501 || error.status === 404)) return undefined;
      throw error;
    }
  }

  /** The picture's node ids by component name, for the counts events of a workflow. */
  async nodesOf(name: string, token: string): Promise<readonly { readonly id: string; readonly name: string }[]> {
    const stored = await this.loom.unary('config-store', 'getWorkflow', { name }, token);
    if (stored.workflow === undefined) throw new ApiError(404, `no workflow '${name}'`);
    return workflowGraph(workflowFromProto(stored.workflow)).nodes;
  }

  private async endsOf(name: string, version: number, token: string): Promise<Ends | undefined> {
    const key = `${name}@${version}`;
    const known = this.ends.get(key);
    if (known !== undefined) return known;
    try {
      const stored = await this.loom.unary('config-store', 'getWorkflow', { name }, token);
      if (stored.workflow === undefined) return undefined;
      const ends = endsOf(workflowFromProto(stored.workflow));
      this.ends.set(`${name}@${stored.metadata?.version ?? version}`, ends);
      return ends;
    } catch (error) {
      throw apiErrorOf(error, 'config-store');
    }
  }
}

/** The resources a workflow's components use: name and kind (never their parameters, which hold sealed secrets). */
function resourcesOf(workflow: WorkflowConfiguration): { name: string; kind: string; usedBy: string[] }[] {
  const byName = new Map<string, { name: string; kind: string; usedBy: string[] }>();
  for (const component of workflow.components) {
    const resource = component.resource;
    if (resource === undefined || resource === null) continue;
    const entry = byName.get(resource.name) ?? {
      name: shownComponentName(resource.name),
      kind: resource.resource.name || resource.resource.qualifiedName,
      usedBy: [],
    };
    entry.usedBy.push(shownComponentName(component.name));
    byName.set(resource.name, entry);
  }
  return [...byName.values()];
}

/** The skills a workflow's components call. */
function skillsOf(workflow: WorkflowConfiguration): { name: string; url: string; component: string }[] {
  return workflow.components.flatMap((component) =>
    component.skill === null ? [] : [{ name: component.skill.name, url: component.skill.url, component: shownComponentName(component.name) }],
  );
}

/** One component's counts as the pages show them. */
export interface ComponentCountsView {
  readonly in: number;
  readonly out: number;
  readonly failed: number;
  readonly retried: number;
  readonly queued: number;
  readonly lastError?: string;
}

/** The `counts` event: each component's counters by its node id in the picture, and the run's state. */
export function countsEvent(
  components: readonly ComponentStatus[],
  state: WorkflowState,
  nodes: readonly { readonly id: string; readonly name: string }[],
): { components: Record<string, ComponentCountsView>; state: string } {
  const idOf = new Map(nodes.map((node) => [node.name, node.id]));
  const counts: Record<string, ComponentCountsView> = {};
  for (const component of components) {
    const id = idOf.get(component.name);
    if (id === undefined) continue;
    counts[id] = {
      in: component.messagesIn,
      out: component.messagesOut,
      failed: component.messagesFailed,
      retried: component.messagesRetried,
      queued: component.queueDepth,
      ...(component.lastError ? { lastError: component.lastError } : {}),
    };
  }
  return { components: counts, state: stateName(state) };
}

/** Whether a WatchRun event carries counters (durable mode's reports do; in-memory runs report state and errors). */
export function carriesCounts(event: WatchRunResponse): boolean {
  return event.components.length > 0;
}
