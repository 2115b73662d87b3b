import { status } from '@grpc/grpc-js';
import {
  AuditEventType,
  type DescribeStorageResponse,
  type ResealWorkflowsResponse,
  type WorkflowStoreClient,
  SecretsService,
  type Variable,
} from '@loom/contracts';
import { FailedPreconditionError, SEALED_PREFIX, UnavailableError, ValidationError, VARIABLE_NAME } from '@loom/domain';
import { appendRequired, AuditAppender, type AsyncImplementation, call, isServiceError, type ServiceInstance, type ServiceModule } from '@loom/service-kit';
import { type Logger, redactor as processRedactor, type SecretRedactor } from '@loom/telemetry';
import { KeyRing } from './key-ring.js';
import { checkSlots, openSlots, sealSlots } from './sealing.js';
import { type OpenedDatabase } from '@loom/postgres';
import { openSecretsStorage } from './storage.js';
import { type BeforeCommit, type VariableRow, VariableStore } from './variable-store.js';

/** RPCs only some identities may call. */
export const secretsAccessPolicy = { decryptResources: ['executor'] } as const;

const MAX_KEY_LENGTH = 128;
const MAX_VALUE_BYTES = 64 * 1024;
/** How long RotateKey waits for the config store to re-seal every stored workflow. */
const RESEAL_DEADLINE_MS = 300_000;
const DEFAULT_PAGE_SIZE = 100;
const MAX_PAGE_SIZE = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Stored as the acting user when a request names none (the column is NOT NULL). */
export const UNKNOWN_USER_UUID = '00000000-0000-0000-0000-000000000000';

function checkKey(key: string): string {
  if (key === '') throw ValidationError.of('key', 'is required', 'MISSING_FIELD');
  if (key.length > MAX_KEY_LENGTH) throw ValidationError.of('key', `must be at most ${MAX_KEY_LENGTH} characters`, 'TOO_LONG');
  if (!VARIABLE_NAME.test(key)) throw ValidationError.of('key', 'must start with a letter or _ and hold only letters, digits, _ . -', 'INVALID_VALUE');
  return key;
}

function checkValue(value: string, encrypted: boolean): string {
  if (Buffer.byteLength(value) > MAX_VALUE_BYTES) throw ValidationError.of('value', `must be at most ${MAX_VALUE_BYTES} bytes`, 'TOO_LONG');
  if (encrypted && value === '') throw ValidationError.of('value', 'an encrypted variable needs a value', 'MISSING_FIELD');
  return value;
}

function checkUser(userUuid: string): string {
  if (userUuid === '') return UNKNOWN_USER_UUID;
  if (!UUID.test(userUuid)) throw ValidationError.of('user_uuid', 'must be a UUID', 'INVALID_VALUE');
  return userUuid.toLowerCase();
}

/** Refuses the whole workflow the old contract sent: only secret slots reach this service (scripts and options never do). */
function refuseWholeWorkflow(workflow: unknown): void {
  if (workflow !== undefined) {
    throw ValidationError.of('workflow', 'whole workflows are no longer accepted: send the secret slots (slots: path, value, sensitive)', 'UNSUPPORTED_FIELD');
  }
}

/** The variable as callers see it: an encrypted value only ever as its `###AES-` text. */
function toMessage(row: VariableRow): Variable {
  return {
    uuid: row.uuid,
    key: row.key,
    value: row.encrypted ? SEALED_PREFIX + row.value : row.value,
    encrypted: row.encrypted,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    createdByUuid: row.createdByUuid,
    lastUpdatedByUuid: row.lastUpdatedByUuid ?? '',
  };
}

function pageAfter(token: string): string | undefined {
  if (token === '') return undefined;
  const key = Buffer.from(token, 'base64url').toString('utf8');
  if (!VARIABLE_NAME.test(key)) throw ValidationError.of('page_token', 'is not a token this service issued', 'INVALID_VALUE');
  return key;
}

function pageSize(size: number): number {
  if (size < 0) throw ValidationError.of('page_size', 'must not be negative', 'INVALID_VALUE');
  return size === 0 ? DEFAULT_PAGE_SIZE : Math.min(size, MAX_PAGE_SIZE);
}

/** What the secrets RPCs work with. */
export interface SecretsDependencies {
  readonly store: VariableStore;
  readonly keyRing: KeyRing;
  /** The database the variables are in (its address never holds credentials). */
  readonly storage: Pick<OpenedDatabase, 'target' | 'embedded'>;
  readonly redactor: SecretRedactor;
  /** Where the service's audit events go (created at first use: the server's own address is known only once it listens). */
  readonly audit: () => AuditAppender;
  /** The config store, which re-seals the stored workflows after a key rotation (created at first use, like `audit`). */
  readonly configStore: () => WorkflowStoreClient;
  readonly logger: Logger;
}

/** The loom.v1.Secrets handlers. */
export function secretsImplementation(deps: SecretsDependencies): AsyncImplementation<typeof SecretsService> {
  const { store, keyRing, redactor, logger } = deps;
  const stored = (value: string, encrypted: boolean): string => (encrypted ? keyRing.encrypt(value) : value);
  /**
   * The audit event of a variable change, appended inside its transaction before the commit (never the value); fails
   * closed: an event that cannot be written rolls the change back and the call is UNAVAILABLE.
   */
  const audited =
    (type: AuditEventType, actor: string | undefined): BeforeCommit =>
    async (row) => {
      const userUuid = type === AuditEventType.AUDIT_EVENT_TYPE_VARIABLE_CREATED ? row.createdByUuid : (row.lastUpdatedByUuid ?? '');
      await appendRequired(deps.audit(), {
        type,
        actor: actor ?? 'anonymous',
        attributes: { key: row.key, uuid: row.uuid, encrypted: String(row.encrypted), userUuid },
      });
    };
  return {
    async createVariable(request, context) {
      const key = checkKey(request.key);
      const value = checkValue(request.value, request.encrypted);
      if (request.encrypted) redactor.add(value);
      const row = await store.create(
        { key, value: stored(value, request.encrypted), encrypted: request.encrypted, createdByUuid: checkUser(request.userUuid) },
        audited(AuditEventType.AUDIT_EVENT_TYPE_VARIABLE_CREATED, context.identity),
      );
      logger.info({ key, encrypted: row.encrypted }, 'variable created');
      return { variable: toMessage(row) };
    },

    async updateVariable(request, context) {
      const key = checkKey(request.key);
      const updatedByUuid = checkUser(request.userUuid);
      const current = await store.get(key);
      const encrypted = request.encrypted ?? current.encrypted;
      let value: string;
      if (request.value !== undefined) {
        value = checkValue(request.value, encrypted);
        if (encrypted) redactor.add(value);
        value = stored(value, encrypted);
      } else if (encrypted === current.encrypted) {
        value = current.value;
      } else if (encrypted) {
        redactor.add(current.value);
        value = keyRing.encrypt(current.value);
      } else {
        throw new FailedPreconditionError(`variable '${key}' is encrypted: to store it in clear, give its new value`);
      }
      const row = await store.update(key, { value, encrypted, updatedByUuid }, audited(AuditEventType.AUDIT_EVENT_TYPE_VARIABLE_UPDATED, context.identity));
      logger.info({ key, encrypted: row.encrypted }, 'variable updated');
      return { variable: toMessage(row) };
    },

    async getVariable(request) {
      return { variable: toMessage(await store.get(checkKey(request.key))) };
    },

    async listVariables(request) {
      const limit = pageSize(request.pageSize);
      const rows = await store.list(limit + 1, pageAfter(request.pageToken));
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const nextPageToken = rows.length > limit && last !== undefined ? Buffer.from(last.key).toString('base64url') : '';
      return { variables: page.map(toMessage), nextPageToken };
    },

    async deleteVariable(request, context) {
      const key = checkKey(request.key);
      await store.delete(key, audited(AuditEventType.AUDIT_EVENT_TYPE_VARIABLE_DELETED, context.identity));
      logger.info({ key }, 'variable deleted');
      return {};
    },

    async sealConfiguration(request) {
      refuseWholeWorkflow(request.workflow);
      checkSlots(request.slots);
      return { workflow: undefined, slots: await sealSlots(request.slots, (names) => store.getMany(names), keyRing) };
    },

    decryptResources(request, context) {
      refuseWholeWorkflow(request.workflow);
      checkSlots(request.slots);
      const slots = openSlots(request.slots, keyRing, (plain) => redactor.add(plain));
      logger.info({ workflow: request.workflowName, slots: slots.length, caller: context.identity }, 'resources decrypted for workflow start');
      return Promise.resolve({ workflow: undefined, slots });
    },

    async rotateKey(request, context) {
      const previous = keyRing.activeKeyId;
      // fail closed: the key changes only once its event is on disk
      const activeKeyId = await keyRing.rotate(request.keyId, async (keyId) => {
        await appendRequired(deps.audit(), {
          type: AuditEventType.AUDIT_EVENT_TYPE_KEY_ROTATED,
          actor: context.identity ?? 'anonymous',
          attributes: { previousKeyId: previous, activeKeyId: keyId },
        });
      });
      for (const secret of keyRing.secrets()) redactor.add(secret);
      const variablesReencrypted = await store.reencryptAll((value) => keyRing.encrypt(keyRing.decrypt(value)));
      logger.info({ previous, activeKeyId, variablesReencrypted }, 'encryption key rotated');
      let resealed: ResealWorkflowsResponse;
      try {
        resealed = await call(deps.configStore(), 'resealWorkflows', {}, { deadlineMs: RESEAL_DEADLINE_MS, signal: context.signal });
      } catch (error) {
        const reason = isServiceError(error) ? `${status[error.code]}: ${error.details}` : String(error);
        logger.error({ activeKeyId, reason }, 'stored workflows not re-sealed after the key rotation');
        throw new UnavailableError(
          `key '${activeKeyId}' is active and ${variablesReencrypted} variables are re-encrypted, but the stored workflows were not re-sealed (${reason}); ` +
            `call RotateKey again with key_id '${activeKeyId}' to finish, before removing the old key`,
          { cause: error },
        );
      }
      logger.info(
        { activeKeyId, workflowsResealed: resealed.workflowsResealed, workflowsLeft: resealed.workflowsLeft },
        'stored workflows re-sealed under the new key',
      );
      return { activeKeyId, variablesReencrypted, workflowsReencrypted: resealed.workflowsResealed, workflowsLeft: resealed.workflowsLeft };
    },

    describeStorage(): Promise<DescribeStorageResponse> {
      const { storage } = deps;
      return Promise.resolve({
        embedded: storage.embedded !== undefined,
        address: `${storage.target.host}:${storage.target.port}`,
        database: storage.target.database,
        dataDirectory: storage.embedded?.dataDir ?? '',
        activeKeyId: keyRing.activeKeyId,
      });
    },
  };
}

/** loom.v1.Secrets, deployable alone (`loom serve --services secrets`) or with the others. */
export const secretsModule: ServiceModule<'secrets' | 'embedded'> = {
  name: 'secrets',
  fullName: 'loom.v1.Secrets',
  configSections: ['secrets', 'embedded'],
  async create({ config, logger, clients }): Promise<ServiceInstance> {
    const storage = await openSecretsStorage(config, logger);
    try {
      const keyRing = await KeyRing.load({
        configuredKeys: config.secrets.keys,
        ...(config.secrets.activeKeyId === undefined ? {} : { configuredActiveKeyId: config.secrets.activeKeyId }),
        file: config.secrets.keyRingFile,
        generateKeys: config.secrets.generateKeys,
        logger,
      });
      for (const secret of keyRing.secrets()) processRedactor.add(secret);
      let appender: AuditAppender | undefined;
      const implementation = secretsImplementation({
        store: new VariableStore(storage.db),
        keyRing,
        storage,
        redactor: processRedactor,
        audit: () => (appender ??= new AuditAppender(clients.get('audit'))),
        configStore: () => clients.get('config-store'),
        logger,
      });
      return {
        addToServer(server) {
          server.addService('loom.v1.Secrets', SecretsService, implementation, { restrict: secretsAccessPolicy });
        },
        close: () => storage.close(),
      };
    } catch (error) {
      await storage.close();
      throw error;
    }
  },
};
