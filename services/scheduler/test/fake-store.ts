import { type Schedule as ScheduleMessage, type WatchWorkflowsResponse, type Workflow, WorkflowEventType, WorkflowStoreService } from '@loom/contracts';
import { COMPONENT_KINDS, findComponentDefinition, NotFoundError, type Schedule } from '@loom/domain';
import { componentDefinitionToProto, scheduleToProto } from '@loom/domain/proto';
import { StreamChannel } from '@loom/foundation';
import { type AsyncImplementation, type ServiceInstance, type ServiceModule, unimplemented } from '@loom/service-kit';

/** A workflow as the fake store holds it. */
interface Stored {
  readonly name: string;
  version: number;
  autoStart: boolean;
  inlet: boolean;
  schedule: ScheduleMessage | undefined;
}

/** How a test stores a workflow in the fake. */
export interface FakeWorkflow {
  autoStart?: boolean;
  /** Whether the workflow has an inlet source (for ALLOW). */
  inlet?: boolean;
  schedule?: Schedule;
}

/** The inlet's component name in every fake workflow that has one. */
export const INLET = 'Trigger_0f0e0d0c-0b0a-4909-8807-060504030201';

/** A stored name for a test workflow. */
export function storedName(base: string, index = 0): string {
  return `${base}_00000000-0000-4000-8000-${String(index).padStart(12, '0')}`;
}

function workflowOf(stored: Stored): Workflow {
  const inlet = findComponentDefinition(COMPONENT_KINDS.INLET);
  return {
    name: stored.name,
    autoStart: stored.autoStart,
    components:
      stored.inlet && inlet !== undefined
        ? [{ name: INLET, component: componentDefinitionToProto(inlet), options: [], resource: undefined, skill: undefined, skillConfiguration: undefined }]
        : [],
    links: [],
    resources: [],
    skills: [],
    workflowResources: [],
  };
}

/**
 * A hand-written config store on real gRPC: WatchWorkflows (snapshot, marker, then live puts and deletes, a put for a
 * schedule change as the real store sends it) and GetSchedule, over workflows a test puts in.
 */
export class FakeStore {
  private readonly workflows = new Map<string, Stored>();
  private readonly watchers = new Set<(event: WatchWorkflowsResponse) => void>();

  /** Stores a workflow: a new one at version 1, an existing one as its next version. */
  put(name: string, workflow: FakeWorkflow = {}): void {
    const existing = this.workflows.get(name);
    const stored: Stored = {
      name,
      version: (existing?.version ?? 0) + 1,
      autoStart: workflow.autoStart ?? false,
      inlet: workflow.inlet ?? false,
      schedule: workflow.schedule === undefined ? existing?.schedule : scheduleToProto(workflow.schedule),
    };
    this.workflows.set(name, stored);
    this.emit(this.putEvent(stored));
  }

  /** Stores a schedule (the workflow keeps its version), as PutSchedule does. */
  putSchedule(name: string, schedule: Schedule): void {
    const stored = this.workflows.get(name);
    if (stored === undefined) throw new NotFoundError('workflow', name);
    stored.schedule = scheduleToProto(schedule);
    this.emit(this.putEvent(stored));
  }

  private putEvent(stored: Stored): WatchWorkflowsResponse {
    return {
      type: WorkflowEventType.WORKFLOW_EVENT_TYPE_PUT,
      summary: { name: stored.name, uuid: stored.name.slice(-36), version: stored.version, autoStart: stored.autoStart, valid: true, invalidReason: '' },
      workflow: workflowOf(stored),
      metadata: { version: stored.version, sha256: '', updatedAt: new Date(), pushedBy: 'test' },
    };
  }

  private emit(event: WatchWorkflowsResponse): void {
    for (const watcher of this.watchers) watcher(event);
  }

  private implementation(): AsyncImplementation<typeof WorkflowStoreService> {
    const refuse = unimplemented(WorkflowStoreService, {
      putWorkflow: 'not faked',
      getWorkflow: 'not faked',
      listWorkflows: 'not faked',
      deleteWorkflow: 'not faked',
      watchWorkflows: '',
      putSchedule: 'not faked',
      getSchedule: '',
      resealWorkflows: 'not faked',
      listWorkflowVersions: 'not faked',
      diffWorkflowVersions: 'not faked',
      rollbackWorkflow: 'not faked',
      applyWorkflows: 'not faked',
      planWorkflows: 'not faked',
    });
    return {
      ...refuse,
      watchWorkflows: async (_request, send, context) => {
        // bounded as the real store's stream is
        const events = new StreamChannel<WatchWorkflowsResponse>({ capacity: 10_000, signal: context.signal });
        const watcher = (event: WatchWorkflowsResponse): void => events.push(event);
        this.watchers.add(watcher);
        try {
          for (const stored of this.workflows.values()) await send(this.putEvent(stored));
          await send({ type: WorkflowEventType.WORKFLOW_EVENT_TYPE_SNAPSHOT_COMPLETE, summary: undefined, workflow: undefined, metadata: undefined });
          for await (const event of events) await send(event);
        } finally {
          this.watchers.delete(watcher);
          events.close();
        }
      },
      getSchedule: (request) => {
        const schedule = this.workflows.get(request.workflowName)?.schedule;
        if (schedule === undefined) return Promise.reject(new NotFoundError('schedule of workflow', request.workflowName));
        return Promise.resolve({ schedule });
      },
    };
  }

  /** The fake as a service module named `config-store`, served beside the scheduler. */
  module(): ServiceModule {
    return {
      name: 'config-store',
      fullName: 'loom.v1.WorkflowStore',
      configSections: [],
      create: (): Promise<ServiceInstance> =>
        Promise.resolve({
          addToServer: (server) => server.addService('loom.v1.WorkflowStore', WorkflowStoreService, this.implementation()),
          close: () => Promise.resolve(),
        }),
    };
  }
}
