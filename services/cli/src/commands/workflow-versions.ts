import { status as grpcStatus } from '@grpc/grpc-js';
import { AuditClient, AuditEventType, type WorkflowMetadata, WorkflowStoreClient } from '@loom/contracts';
import { call } from '@loom/service-kit/client';
import { type Command, InvalidArgumentError } from 'commander';
import { cliIo } from '../cli-io.js';
import { type GlobalOptions } from '../global-options.js';
import { printTable } from '../output.js';
import { pages } from '../paging.js';
import { withClient } from '../service-client.js';

/** A version number argument: 1 or more. */
export function parseKeptVersion(value: string): number {
  const version = Number(value);
  if (!Number.isSafeInteger(version) || version < 1) throw new InvalidArgumentError('expected a version number, 1 or more.');
  return version;
}

/** Who pushed each version, by `<version>:<sha256>`, from the audit log's WORKFLOW_CONFIG_PUSHED events of the workflow. */
async function pushersFromAudit(command: Command, workflowName: string): Promise<Map<string, string> | string> {
  try {
    return await withClient(command, AuditClient, async (client) => {
      const pushers = new Map<string, string>();
      const query = { types: [AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_CONFIG_PUSHED], workflowName, since: undefined, until: undefined };
      for await (const page of pages((request) => call(client, 'query', { ...query, ...request }))) {
        for (const event of page.events) pushers.set(`${event.attributes.version}:${event.attributes.sha256}`, event.actor);
      }
      return pushers;
    });
  } catch (error) {
    // the audit log may be off (FAILED_PRECONDITION) or closed to this caller: the store's own record is shown instead
    const code = (error as { code?: number }).code;
    if (code === undefined) throw error;
    return `${grpcStatus[code] ?? code}: ${(error as { details?: string }).details ?? ''}`;
  }
}

function versionRow(version: WorkflowMetadata, pushedBy: string, current: boolean): Record<string, string | number> {
  return {
    version: version.version,
    time: version.updatedAt?.toISOString() ?? '',
    sha256: version.sha256,
    pushedBy: pushedBy === '' ? '-' : pushedBy,
    current: current ? 'yes' : '',
  };
}

/** `loom workflow history|diff|rollback`: a workflow's kept versions. */
export function addWorkflowVersionCommands(workflow: Command): void {
  workflow
    .command('history')
    .description("list a workflow's kept versions, newest first: version, time, sha256 and who pushed it (from the audit log)")
    .argument('<name>', 'stored name <workflow_name>_<uuid>, or the workflow name when only one has it')
    .action((name: string, _options: object, command: Command) =>
      withClient(command, WorkflowStoreClient, async (client, globals: GlobalOptions) => {
        const { name: storedName, versions, oldestKept } = await call(client, 'listWorkflowVersions', { name });
        const pushers = await pushersFromAudit(command, storedName);
        if (typeof pushers === 'string') cliIo().stderr.write(`loom: the audit log could not be read (${pushers}); who pushed is the store's record\n`);
        const rows = versions.map((version, index) => {
          const audited = typeof pushers === 'string' ? undefined : pushers.get(`${version.version}:${version.sha256}`);
          return versionRow(version, audited ?? version.pushedBy, index === 0);
        });
        printTable(globals.output, rows, { name: storedName, oldestKept, versions: rows });
      }),
    );

  workflow
    .command('diff')
    .description("print a unified diff of two kept versions' compact forms ($$ references as pushed, no secret value)")
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .argument('<from>', 'the older version', parseKeptVersion)
    .argument('<to>', 'the newer version', parseKeptVersion)
    .action((name: string, fromVersion: number, toVersion: number, _options: object, command: Command) =>
      withClient(command, WorkflowStoreClient, async (client, globals: GlobalOptions) => {
        const answer = await call(client, 'diffWorkflowVersions', { name, fromVersion, toVersion });
        if (globals.output === 'json') printTable('json', [], answer);
        else cliIo().stdout.write(answer.diff === '' ? `versions ${fromVersion} and ${toVersion} are the same\n` : answer.diff);
      }),
    );

  workflow
    .command('rollback')
    .description('store a new version equal to a kept one ($$ references resolved again, audited); a running workflow restarts as on a push')
    .argument('<name>', 'stored name, or the workflow name when only one has it')
    .requiredOption('--to <version>', 'the kept version to store again', parseKeptVersion)
    .option('--expected-version <n>', 'roll back only if the current version is this one', parseKeptVersion)
    .action((name: string, options: { to: number; expectedVersion?: number }, command: Command) =>
      withClient(command, WorkflowStoreClient, async (client, globals: GlobalOptions) => {
        const answer = await call(client, 'rollbackWorkflow', { name, toVersion: options.to, expectedVersion: options.expectedVersion });
        const row = {
          name: answer.summary?.name ?? name,
          version: answer.metadata?.version ?? 0,
          rolledBackTo: options.to,
          status: answer.unchanged ? 'unchanged' : 'stored',
        };
        printTable(globals.output, [row], answer);
      }),
    );
}
