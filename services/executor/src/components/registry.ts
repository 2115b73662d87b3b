import { tlsFiles } from '@loom/config';
import { type BearerCredentials, bearerCredentialsOf } from '@loom/service-kit';
import { type ExecutorConfig } from '../executor-config.js';
import { COMPONENT_KINDS, type ComponentInstance, FailedPreconditionError } from '@loom/domain';
import { type ComponentFactory } from '../runtime/component.js';
import { createJavaScriptProcessor, type ScriptLimits } from '../scripts/javascript.js';
import { createPythonProcessor } from '../scripts/python.js';
import { type PythonSandbox, pythonSandbox } from '../scripts/sandbox.js';
import { type WarmInterpreters } from '../scripts/warm-interpreters.js';
import { type StatePath, statePaths } from '../scripts/script-grants.js';
import { enricherFactory } from './enricher.js';
import { fileReaderFactory } from './file-reader.js';
import { graphReaderFactory } from './graph-reader.js';
import { type GraphStores } from './graph-stores.js';
import { graphWriterFactory } from './graph-writer.js';
import { relationExtractionFactory } from './relations/relation-extraction.js';
import { tokenOccurrenceWriterFactory } from './relations/token-occurrence-writer.js';
import { inletFactory } from './inlet.js';
import { loggerFactory } from './logger.js';
import { natsPublisherFactory } from './nats-publisher.js';
import { natsSubscriberFactory } from './nats-subscriber.js';
import { skillFactory, type SkillGatewayProvider } from './skills.js';
import { timerFactory } from './timer.js';
import { webhookFactory, type WebhookSecurity } from './webhook.js';

/** Whether a component instance runs user code (MessageTransformer, MessageFilter). */
export function isScriptComponent(instance: ComponentInstance): boolean {
  const kind = instance.component.qualifiedName;
  return kind === COMPONENT_KINDS.MESSAGE_TRANSFORMER || kind === COMPONENT_KINDS.MESSAGE_FILTER;
}

/** A script language this executor cannot run yet. */
export class ScriptLanguageUnavailableError extends FailedPreconditionError {}

function scriptFactory(role: 'transformer' | 'filter', limits: ScriptLimits, python: PythonSettings): ComponentFactory {
  return {
    kind: 'processor',
    create(context) {
      const language = context.options.string('language');
      if (language === 'javascript') return createJavaScriptProcessor(context, role, limits);
      if (language === 'python') {
        // the sandbox is probed at the first Python component, so a machine without namespaces fails only Python workflows
        return new Promise<PythonSandbox>((resolve) => resolve(pythonSandbox(python.policy, python.state))).then((sandbox) =>
          createPythonProcessor(context, role, { memoryLimitMb: python.memoryLimitMb, timeoutMs: limits.timeoutMs }, sandbox, python.warm),
        );
      }
      return Promise.reject(new ScriptLanguageUnavailableError(`${context.name}: language '${language}' is neither 'python' nor 'javascript'`));
    },
  };
}

interface PythonSettings {
  readonly policy: boolean;
  readonly state: readonly StatePath[];
  readonly memoryLimitMb: number;
  readonly warm: WarmInterpreters | undefined;
}

/** The sandbox of Python script hosts under this configuration (SandboxUnavailableError where there is none). */
export function pythonSandboxOf(config: ExecutorConfig): PythonSandbox {
  return pythonSandbox(config.security.serverPolicy.enabled, statePaths(config));
}

/** What the component kinds are built with. */
export interface FactoryOptions {
  /** Limits of JavaScript scripts; default from `loom.scripts.*`. */
  readonly limits?: ScriptLimits;
  /** Where graph components get their stores; without it, graph components are not available. */
  readonly graphStores?: GraphStores;
  /** The skill gateway the skill components call; without it, skill components are not available. */
  readonly skillGateway?: SkillGatewayProvider;
  /** Warm interpreters Python script hosts start from; without it, each starts its interpreter from scratch. */
  readonly warmInterpreters?: WarmInterpreters;
}

/** What webhooks take from loom's settings: `loom.auth`'s bearer-token check (built at the first webhook that needs it) and `loom.tls`'s certificate. */
function webhookSecurity(config: ExecutorConfig): WebhookSecurity {
  let credentials: BearerCredentials | undefined;
  const tls = tlsFiles(config.tls);
  return {
    credentials: () => (credentials ??= bearerCredentialsOf(config.auth)),
    tls: tls === undefined ? undefined : { certFile: tls.certFile, keyFile: tls.keyFile },
  };
}

/** The component kinds this executor runs, by qualified name. */
export function componentFactories(config: ExecutorConfig, options: FactoryOptions = {}): ReadonlyMap<string, ComponentFactory> {
  const limits = options.limits ?? { memoryLimitMb: config.scripts.javascript.memoryLimitMb, timeoutMs: config.scripts.timeLimitMs };
  const python: PythonSettings = {
    policy: config.security.serverPolicy.enabled,
    state: statePaths(config),
    memoryLimitMb: config.scripts.python.memoryLimitMb,
    warm: options.warmInterpreters,
  };
  const graph: [string, ComponentFactory][] =
    options.graphStores === undefined
      ? []
      : [
          [COMPONENT_KINDS.GRAPH_READER, graphReaderFactory(options.graphStores)],
          [COMPONENT_KINDS.GRAPH_DATABASE_WRITER, graphWriterFactory(options.graphStores)],
          [COMPONENT_KINDS.TOKEN_OCCURRENCE_WRITER, tokenOccurrenceWriterFactory(options.graphStores)],
          [COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION, relationExtractionFactory(options.graphStores)],
        ];
  const gateway = options.skillGateway;
  const skills: [string, ComponentFactory][] =
    gateway === undefined
      ? []
      : [
          [COMPONENT_KINDS.ENTITY_EXTRACTION, skillFactory('ENTITY_EXTRACTION', gateway)],
          [COMPONENT_KINDS.KEYWORD_EXTRACTION, skillFactory('KEYWORD_EXTRACTION', gateway)],
          [COMPONENT_KINDS.WEB_DATA_EXTRACTION, skillFactory('WEB_DATA_EXTRACTION', gateway)],
          [COMPONENT_KINDS.PDF_PARSING, skillFactory('PDF_PARSING', gateway)],
        ];
  return new Map<string, ComponentFactory>([
    ...graph,
    ...skills,
    [COMPONENT_KINDS.TIMER, timerFactory],
    [COMPONENT_KINDS.INLET, inletFactory],
    [COMPONENT_KINDS.FILE_READER, fileReaderFactory],
    [COMPONENT_KINDS.WEBHOOK, webhookFactory(config.server.host, webhookSecurity(config))],
    [COMPONENT_KINDS.MESSAGE_TRANSFORMER, scriptFactory('transformer', limits, python)],
    [COMPONENT_KINDS.MESSAGE_FILTER, scriptFactory('filter', limits, python)],
    [COMPONENT_KINDS.HTTP_ENRICHER, enricherFactory],
    [COMPONENT_KINDS.LOGGER, loggerFactory],
    [COMPONENT_KINDS.NATS_SUBSCRIBER, natsSubscriberFactory],
    [COMPONENT_KINDS.NATS_PUBLISHER, natsPublisherFactory],
  ]);
}
