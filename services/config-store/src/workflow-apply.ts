import { ApplyAction, type ApplyPlanEntry, type ApplyWorkflowsRequest } from '@loom/contracts';
import {
  checkWorkflowName,
  type FieldViolation,
  MAX_WORKFLOW_BYTES,
  readWorkflowText,
  restoreVariableReferences,
  type Schedule,
  serializeScheduleJson,
  serializeWorkflowJson,
  type StoredName,
  validateWorkflow,
  ValidationError,
  withCatalogDefinitions,
  type WorkflowConfiguration,
} from '@loom/domain';
import { scheduleFromProto } from '@loom/domain/proto';
import { checkSchedule } from './schedule-check.js';
import { baseNameOf, compactFormOf, diffTexts } from './workflow-diff.js';
import { sha256Of } from './workflow-directory.js';
import { type StoredWorkflow, type WorkflowRepository } from './workflow-repository.js';

/** One workflow of a folder and what applying it does. */
export interface PlannedWorkflow {
  readonly sourceName: string;
  /** The file's text, stored as the version's source (its SHA-256). */
  readonly sourceText: string;
  readonly name: StoredName;
  /** Checked, with the catalog's definitions; not sealed yet. */
  readonly configuration: WorkflowConfiguration;
  readonly action: ApplyAction.APPLY_ACTION_ADDED | ApplyAction.APPLY_ACTION_CHANGED | ApplyAction.APPLY_ACTION_UNCHANGED;
  /** The stored version the plan was made against (0: none); the write expects it. */
  readonly storedVersion: number;
  readonly diff: string;
  readonly linesAdded: number;
  readonly linesRemoved: number;
}

/** One schedule file of a folder and what applying it does. */
export interface PlannedSchedule {
  readonly sourceName: string;
  /** The stored name of its workflow. */
  readonly workflowName: string;
  readonly schedule: Schedule;
  readonly action: ApplyAction;
}

/** What applying a folder does: the workflows written, the schedules, the workflows removed. */
export interface ApplyPlan {
  readonly workflows: PlannedWorkflow[];
  readonly schedules: PlannedSchedule[];
  readonly removed: StoredWorkflow[];
}

/** A violation of file `index` of a list, its description naming the file unless it already does (a compact file's lines do). */
function inFile(list: string, index: number, sourceName: string, violation: FieldViolation): FieldViolation {
  const field = violation.field === '' ? `${list}[${index}]` : `${list}[${index}].${violation.field}`;
  const description = sourceName === '' || violation.description.includes(sourceName) ? violation.description : `${violation.description} (in ${sourceName})`;
  return { ...violation, field, description };
}

/** Texts most recently found to mean their workflow's current version, so a repeated plan need not read them again. */
export class UnchangedTexts {
  private readonly byText = new Map<string, { readonly name: string; readonly version: number; readonly sha256: string }>();

  constructor(private readonly capacity = 10_000) {}

  /** The workflow a text was found to mean, when that workflow is still at the version it was compared with. */
  find(textSha256: string, repository: WorkflowRepository): StoredWorkflow | undefined {
    const seen = this.byText.get(textSha256);
    const current = seen === undefined ? undefined : repository.find(seen.name);
    return current?.metadata.version === seen?.version && current?.metadata.sha256 === seen?.sha256 ? current : undefined;
  }

  remember(textSha256: string, workflow: StoredWorkflow): void {
    this.byText.delete(textSha256);
    this.byText.set(textSha256, { name: workflow.name.full, version: workflow.metadata.version, sha256: workflow.metadata.sha256 });
    // a Map iterates in insertion order: the first key is the one remembered longest ago
    if (this.byText.size > this.capacity) this.byText.delete(this.byText.keys().next().value as string);
  }
}

/**
 * Reads and checks every file of a folder and compares each with the store, without writing or sealing anything. Every
 * problem of every file is collected: a file that does not read or validate, two files for one workflow, a schedule
 * for no workflow, a removal the store cannot make; any of them is one ValidationError listing them all.
 */
export function planApply(request: ApplyWorkflowsRequest, repository: WorkflowRepository, remembered = new UnchangedTexts()): ApplyPlan {
  const violations: FieldViolation[] = [];
  const workflows: PlannedWorkflow[] = [];
  // which file claimed a workflow: the stored name, or `new:<name>` for one the store does not have yet
  const claimed = new Map<string, { index: number; sourceName: string }>();
  // a file whose text is the one a workflow's current version was pushed or applied as, or was found to mean it by an
  // earlier plan, is unchanged: not read again
  const bySource = new Map(
    repository.list().flatMap((workflow) => (workflow.metadata.sourceSha256 === undefined ? [] : [[workflow.metadata.sourceSha256, workflow]])),
  );
  request.workflows.forEach((file, index) => {
    const sourceName = file.sourceName;
    try {
      const textSha256 = sha256Of(file.text);
      const same = bySource.get(textSha256) ?? remembered.find(textSha256, repository);
      if (same?.configuration !== undefined && !claimed.has(same.name.full)) {
        claimed.set(same.name.full, { index, sourceName });
        const { version } = same.metadata;
        const unchanged = { action: ApplyAction.APPLY_ACTION_UNCHANGED, diff: '', linesAdded: 0, linesRemoved: 0 } as const;
        workflows.push({ sourceName, sourceText: file.text, name: same.name, configuration: same.configuration, storedVersion: version, ...unchanged });
        return;
      }
      const bytes = Buffer.byteLength(file.text);
      if (bytes > MAX_WORKFLOW_BYTES) throw ValidationError.of('text', `is ${bytes} bytes; at most ${MAX_WORKFLOW_BYTES} (4 MiB)`, 'TOO_LARGE');
      const pushed = readWorkflowText(file.text, sourceName).workflow;
      checkWorkflowName(pushed.name);
      const name = repository.storedNameFor(pushed.name);
      const stored = repository.find(name.full);
      const key = stored === undefined && baseNameOf(pushed.name) === pushed.name ? `new:${pushed.name}` : name.full;
      const first = claimed.get(key);
      if (first !== undefined) {
        throw ValidationError.of(
          'name',
          `names workflow '${pushed.name}', as ${first.sourceName} (workflows[${first.index}]) does: one file per workflow`,
          'DUPLICATE_WORKFLOW',
        );
      }
      claimed.set(key, { index, sourceName });
      const named: WorkflowConfiguration = { ...pushed, name: name.full };
      validateWorkflow(named);
      const configuration = withCatalogDefinitions(named);
      const planned = compare(sourceName, file.text, name, configuration, stored);
      if (planned.action === ApplyAction.APPLY_ACTION_UNCHANGED && stored !== undefined) remembered.remember(textSha256, stored);
      workflows.push(planned);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      violations.push(...error.violations.map((violation) => inFile('workflows', index, sourceName, violation)));
    }
  });

  const schedules = planSchedules(request, workflows, repository, violations);

  const kept = new Set(workflows.map((planned) => planned.name.full));
  const removed = request.prune ? repository.list().filter((workflow) => !kept.has(workflow.name.full)) : [];
  for (const workflow of removed) {
    if (!workflow.directory.writable) {
      violations.push({
        field: 'prune',
        description: `would remove workflow '${workflow.name.full}', which is in the read-only startup directory ${workflow.directory.path}: remove its files there, or add a file for it`,
        reason: 'READ_ONLY',
      });
    }
  }
  if (violations.length > 0) throw new ValidationError(violations);
  return { workflows, schedules, removed };
}

/** The folder's schedule files checked and compared with the stored schedules; problems go to `violations`. */
function planSchedules(
  request: ApplyWorkflowsRequest,
  workflows: readonly PlannedWorkflow[],
  repository: WorkflowRepository,
  violations: FieldViolation[],
): PlannedSchedule[] {
  const schedules: PlannedSchedule[] = [];
  request.schedules.forEach((file, index) => {
    try {
      if (file.schedule === undefined) throw ValidationError.of('schedule', 'is required', 'MISSING_FIELD');
      const schedule = checkSchedule(scheduleFromProto(file.schedule));
      const inFolder = workflows.find((planned) => planned.name.full === file.workflowName || planned.name.base === file.workflowName);
      const workflowName = inFolder?.name.full ?? repository.get(checkWorkflowName(file.workflowName, 'workflow_name'), 'workflow_name').name.full;
      const current = repository.find(workflowName)?.schedule;
      const action =
        current === undefined
          ? ApplyAction.APPLY_ACTION_ADDED
          : serializeScheduleJson(current) === serializeScheduleJson(schedule)
            ? ApplyAction.APPLY_ACTION_UNCHANGED
            : ApplyAction.APPLY_ACTION_CHANGED;
      schedules.push({ sourceName: file.sourceName, workflowName, schedule, action });
    } catch (error) {
      if (error instanceof ValidationError) violations.push(...error.violations.map((violation) => inFile('schedules', index, file.sourceName, violation)));
      else if (error instanceof Error && 'kind' in error && error.kind === 'not-found') {
        violations.push(
          inFile('schedules', index, file.sourceName, {
            field: 'workflow_name',
            description: `names workflow '${file.workflowName}', which neither the folder nor the store has`,
            reason: 'UNKNOWN_WORKFLOW',
          }),
        );
      } else throw error;
    }
  });
  return schedules;
}

/** What applying a checked workflow does to the stored one: added, unchanged, or changed with the compact forms' diff. */
function compare(
  sourceName: string,
  sourceText: string,
  name: StoredName,
  configuration: WorkflowConfiguration,
  stored: StoredWorkflow | undefined,
): PlannedWorkflow {
  const planned = { sourceName, sourceText, name, configuration, storedVersion: stored?.metadata.version ?? 0 };
  if (stored === undefined) return { ...planned, action: ApplyAction.APPLY_ACTION_ADDED, diff: '', linesAdded: 0, linesRemoved: 0 };
  // the cheap test first: the full forms, the stored one with its `$$` references written back, are the same
  if (stored.configuration !== undefined) {
    const restored = restoreVariableReferences(stored.configuration, stored.metadata.variableReferences ?? {});
    if (serializeWorkflowJson(restored) === serializeWorkflowJson(configuration)) {
      return { ...planned, action: ApplyAction.APPLY_ACTION_UNCHANGED, diff: '', linesAdded: 0, linesRemoved: 0 };
    }
  }
  // else both sides as export writes them: `$$` references as pushed, no secret value (so an exported folder whose
  // values were sealed at push is unchanged too), options at their defaults left out
  const before = stored.configuration === undefined ? '' : compactFormOf(stored.configuration, stored.metadata.variableReferences ?? {});
  const after = compactFormOf(configuration, {});
  const { diff, linesAdded, linesRemoved } = diffTexts(`${name.full} version ${stored.metadata.version}`, before, sourceName, after);
  const action = diff === '' ? ApplyAction.APPLY_ACTION_UNCHANGED : ApplyAction.APPLY_ACTION_CHANGED;
  return { ...planned, action, diff, linesAdded, linesRemoved };
}

/** The plan as ApplyWorkflows answers it, ordered by stored name; `written` holds the version each write stored. */
export function planEntries(plan: ApplyPlan, written: ReadonlyMap<string, number>): ApplyPlanEntry[] {
  const scheduleAction = new Map(plan.schedules.map((planned) => [planned.workflowName, planned.action]));
  const entries: ApplyPlanEntry[] = [
    ...plan.workflows.map((planned) => ({
      name: planned.name.full,
      sourceName: planned.sourceName,
      action: planned.action,
      diff: planned.diff,
      linesAdded: planned.linesAdded,
      linesRemoved: planned.linesRemoved,
      scheduleAction: scheduleAction.get(planned.name.full) ?? ApplyAction.APPLY_ACTION_UNSPECIFIED,
      version: written.get(planned.name.full) ?? 0,
    })),
    ...plan.removed.map((workflow) => ({
      name: workflow.name.full,
      sourceName: '',
      action: ApplyAction.APPLY_ACTION_REMOVED,
      diff: '',
      linesAdded: 0,
      linesRemoved: 0,
      scheduleAction: ApplyAction.APPLY_ACTION_UNSPECIFIED,
      version: 0,
    })),
  ];
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
