import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPONENT_KINDS, componentInstance, type Schedule, serializeScheduleJson, serializeWorkflowJson } from '@loom/domain';

/** A uuid for test workflow `index`. */
export function uuid(index: number): string {
  return `5c4e0d2a-0000-4000-8000-${String(index).padStart(12, '0')}`;
}

const instance = componentInstance;

/** The inlet of every workflow written here. */
export const INLET = `Ticks_${uuid(900)}`;

/**
 * Writes `<name>_<uuid>.workflow.json` by hand into a storage root, as an operator (or a volume) would place it: an
 * inlet (or a webhook on `webhookPort`) into a logger. Answers the stored name.
 */
export function writeWorkflow(root: string, base: string, index: number, options: { autoStart: boolean; webhookPort?: number; schedule?: Schedule }): string {
  const name = `${base}_${uuid(index)}`;
  const source =
    options.webhookPort === undefined
      ? instance(COMPONENT_KINDS.INLET, INLET)
      : instance(COMPONENT_KINDS.WEBHOOK, `Hook_${uuid(901)}`, { port: options.webhookPort, path: '/' });
  const sink = instance(COMPONENT_KINDS.LOGGER, `Log_${uuid(902)}`);
  const text = serializeWorkflowJson({
    name,
    autoStart: options.autoStart,
    components: [source, sink],
    links: [{ from: source.name, to: sink.name }],
    resources: [],
    skills: [],
    workflowResources: [],
  });
  writeFileSync(join(root, `${name}.workflow.json`), text);
  if (options.schedule !== undefined) writeFileSync(join(root, `${name}.scheduler.json`), serializeScheduleJson(options.schedule));
  return name;
}
