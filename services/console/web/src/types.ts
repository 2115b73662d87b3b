// The shapes of the backend's answers the pages read (services/console/openapi.yaml).

export interface WorkflowRates {
  readonly in: number;
  readonly out: number;
  readonly failed: number;
}

export interface WorkflowSummary {
  readonly name: string;
  /** The name as people read it (a stored `<name>_<uuid>` without its uuid). */
  readonly title?: string;
  readonly lastError?: string;
  readonly version: number;
  readonly state: string;
  readonly executors: readonly { readonly id: string; readonly state: string }[];
  readonly rates: WorkflowRates;
}

export interface PictureNode {
  readonly id: string;
  readonly label: string;
  readonly kind: string;
  readonly type: string;
}

export interface PictureEdge {
  readonly from: string;
  readonly to: string;
  readonly label?: string;
}

export interface WorkflowDetail {
  readonly name: string;
  readonly version: number;
  readonly sha256: string;
  readonly compact: string;
  readonly title?: string;
  readonly state?: string;
  /** The counts when the workflow runs, as the first `counts` event would carry them. */
  readonly counts?: CountsEvent;
  readonly picture: { readonly nodes: readonly PictureNode[]; readonly edges: readonly PictureEdge[] };
  readonly resources: readonly unknown[];
  readonly skills: readonly unknown[];
  readonly history?: readonly unknown[];
}

export interface ComponentCounts {
  readonly in: number;
  readonly out: number;
  readonly failed: number;
  readonly retried: number;
  readonly queued: number;
  readonly lastError?: string;
}

/** The `counts` event of /api/workflows/{name}/events. */
export interface CountsEvent {
  readonly components: Readonly<Record<string, ComponentCounts>>;
  readonly state: string;
}

export interface FailureSummary {
  readonly id: string;
  readonly workflow: string;
  readonly workflowVersion?: number;
  readonly component: string;
  readonly kind?: string;
  readonly error?: string;
  readonly attempts?: number;
  readonly firstFailed?: string;
  readonly lastFailed?: string;
  readonly messageId?: string;
  readonly contentKept?: boolean;
}

export interface FailureDetail extends FailureSummary {
  readonly failure?: { readonly kind?: string; readonly message?: string; readonly [field: string]: unknown };
  readonly message?: { readonly id?: string; readonly body?: unknown; readonly headers?: Readonly<Record<string, string>> };
}

export interface FailuresPage {
  readonly failures: readonly FailureSummary[];
  readonly total?: number;
  /** Failed messages by error kind. */
  readonly counts?: Readonly<Record<string, number>>;
  readonly nextPageToken?: string;
}

export interface AuditEntry {
  readonly sequence?: number | string;
  readonly time?: string;
  readonly actor?: string;
  readonly action?: string;
  readonly workflow?: string;
  readonly component?: string;
  readonly reason?: string;
  readonly attributes?: Readonly<Record<string, string>>;
}

export interface VerifyResult {
  readonly ok: boolean;
  readonly checked: number;
  readonly brokenAt?: number | string;
  readonly problem?: string;
}

export interface SkillRow {
  readonly name: string;
  readonly url: string;
  readonly health: string;
  readonly circuit: string;
  readonly latencyMs?: number;
  readonly detail?: string;
}

export interface ScheduleRow {
  readonly workflow: string;
  readonly cron?: string;
  readonly timezone?: string;
  readonly enabled?: boolean;
  readonly paused?: boolean;
  readonly autoStart?: boolean;
  readonly nextFire?: string;
  readonly lastFire?: string;
  readonly runState?: string;
  /** Fires by outcome (started, skipped, queued, failed, …). */
  readonly fires?: Readonly<Record<string, number>>;
  readonly lastError?: string;
  readonly problem?: string;
}
