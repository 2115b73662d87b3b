import { FireOutcome, SchedulerClient, type ScheduleStatus, WorkflowState } from '@loom/contracts';
import { scheduleFromProto } from '@loom/domain/proto';
import { call } from '@loom/service-kit/client';
import { type Command } from 'commander';
import { type GlobalOptions } from '../global-options.js';
import { printTable } from '../output.js';
import { withClient } from '../service-client.js';
import { cliIo, setExitCode } from '../cli-io.js';

function withScheduler<T>(command: Command, use: (client: SchedulerClient, globals: GlobalOptions) => Promise<T>): Promise<T> {
  return withClient(command, SchedulerClient, use);
}

const stateName = (state: WorkflowState): string =>
  state === WorkflowState.WORKFLOW_STATE_UNSPECIFIED ? '-' : (WorkflowState[state]?.replace('WORKFLOW_STATE_', '') ?? String(state));
const outcomeName = (outcome: FireOutcome): string => FireOutcome[outcome]?.replace('FIRE_OUTCOME_', '') ?? String(outcome);
const time = (date: Date | undefined): string => date?.toISOString() ?? '-';

/** A schedule status as JSON, with enum values by name and the schedule as its `.scheduler.json` shape. */
function statusJson(status: ScheduleStatus): Record<string, unknown> {
  return {
    ...status,
    schedule: status.schedule === undefined ? null : scheduleFromProto(status.schedule),
    runState: stateName(status.runState),
    nextFireTime: status.nextFireTime ?? null,
    lastFireTime: status.lastFireTime ?? null,
    nextRestartTime: status.nextRestartTime ?? null,
  };
}

function statusRow(status: ScheduleStatus): Record<string, string | number | boolean> {
  const schedule = status.schedule === undefined ? undefined : scheduleFromProto(status.schedule);
  return {
    workflow: status.workflowName,
    schedule:
      schedule === undefined
        ? status.scheduleProblem === ''
          ? '-'
          : `invalid: ${status.scheduleProblem}`
        : `${schedule.cron} ${schedule.timezone}${schedule.enabled ? '' : ' (disabled)'}`,
    policy: schedule === undefined ? '-' : `${schedule.overlap}/${schedule.catchUp}`,
    paused: status.paused,
    nextFire: time(status.nextFireTime),
    lastFire: time(status.lastFireTime),
    autoStart: status.autoStart,
    run: stateName(status.runState),
    restarts: status.restartAttempts,
    lastError: status.lastError === '' ? '-' : status.lastError,
  };
}

function printStatuses(globals: GlobalOptions, statuses: ScheduleStatus[]): void {
  if (globals.output === 'json') {
    printTable('json', [], statuses.map(statusJson));
    return;
  }
  const holder = statuses[0]?.leaseHolder;
  printTable('text', statuses.map(statusRow));
  if (holder !== undefined && holder !== '') cliIo().stdout.write(`lease holder: ${holder}\n`);
}

/** `loom schedule list|pause|resume|trigger`, beside `set` and `get` on the config store's schedule files. */
export function addScheduleCommands(schedule: Command): void {
  schedule
    .command('list')
    .description('every workflow with a schedule or autoStart: next and last fire, pause, run state, restart attempts, lease holder')
    .action((_options: object, command: Command) =>
      withScheduler(command, async (client, globals) => printStatuses(globals, (await call(client, 'listSchedules', {})).schedules)),
    );

  schedule
    .command('pause')
    .description("stop a workflow's schedule from firing; fires due while paused are not made up for")
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .action((name: string, _options: object, command: Command) =>
      withScheduler(command, async (client, globals) => {
        const { status } = await call(client, 'pauseSchedule', { workflowName: name });
        if (status !== undefined) printStatuses(globals, [status]);
      }),
    );

  schedule
    .command('resume')
    .description('let a paused schedule fire again, from its next fire time on')
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .action((name: string, _options: object, command: Command) =>
      withScheduler(command, async (client, globals) => {
        const { status } = await call(client, 'resumeSchedule', { workflowName: name });
        if (status !== undefined) printStatuses(globals, [status]);
      }),
    );

  schedule
    .command('trigger')
    .description("fire a workflow's schedule once, now, under its overlap policy (also when paused); exit 1 if the start failed")
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .action((name: string, _options: object, command: Command) =>
      withScheduler(command, async (client, globals) => {
        const fired = await call(client, 'triggerNow', { workflowName: name });
        const outcome = outcomeName(fired.outcome);
        printTable(
          globals.output,
          [{ workflow: name, outcome, runId: fired.runId === '' ? '-' : fired.runId, detail: fired.detail === '' ? '-' : fired.detail }],
          {
            workflow: name,
            outcome,
            runId: fired.runId,
            detail: fired.detail,
          },
        );
        if (fired.outcome === FireOutcome.FIRE_OUTCOME_FAILED) setExitCode(1);
      }),
    );
}
