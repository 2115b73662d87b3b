import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { FailedPreconditionError, LoomError } from '@loom/domain';
import { writeFileAtomic } from '@loom/foundation';

const FORMAT_VERSION = 1;
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** An encrypted value cannot be decrypted: it was changed, cut, or made by other keys. */
export class SealedValueError extends FailedPreconditionError {}

/** The key ring cannot be set up (no key configured and none may be generated, a bad key file). */
export class KeyRingError extends LoomError {
  readonly kind = 'failed-precondition';
}

/** Where keys come from: configured keys and a file of generated keys. */
export interface KeyRingSource {
  /** Key id to base64 of 32 bytes (`loom.secrets.keys.<id>`). */
  readonly configuredKeys: Readonly<Record<string, string>>;
  readonly configuredActiveKeyId?: string;
  /** File of generated keys (`loom.secrets.keyRingFile`), mode 0600. */
  readonly file: string;
  /** `loom.secrets.generateKeys`: whether loom may make keys itself (development); false, every key is configured. */
  readonly generateKeys: boolean;
  readonly logger: { warn(fields: object, message: string): void; info(fields: object, message: string): void };
}

interface KeyRingFile {
  activeKeyId: string;
  keys: Record<string, string>;
}

/**
 * AES-256-GCM with a random 96-bit nonce per value. The encrypted text is base64url of
 * `version | key id length | key id | nonce | ciphertext | tag`, the header being authenticated
 * data, so a value names the key that made it and keys can rotate while old values stay readable.
 */
export class KeyRing {
  private constructor(
    private readonly keys: Map<string, Buffer>,
    private active: string,
    private readonly source: KeyRingSource,
    private readonly generated: Record<string, string>,
  ) {}

  /** Loads configured and generated keys; with no key at all, generates one if generateKeys allows it, else refuses. */
  static async load(source: KeyRingSource): Promise<KeyRing> {
    const fromFile = await readKeyRingFile(source.file);
    const keys = new Map<string, Buffer>();
    for (const [id, base64] of Object.entries({ ...(fromFile?.keys ?? {}), ...source.configuredKeys })) keys.set(id, decodeKey(id, base64));
    const generated = { ...(fromFile?.keys ?? {}) };
    let active = source.configuredActiveKeyId ?? fromFile?.activeKeyId ?? singleKey(source.configuredKeys);
    if (keys.size === 0) {
      if (!source.generateKeys) {
        throw new KeyRingError(
          'no encryption key configured: set loom.secrets.keys.<id> (base64 of 32 bytes) and loom.secrets.activeKeyId, ' +
            'or, for development only, loom.secrets.generateKeys=true to generate one into loom.secrets.keyRingFile',
        );
      }
      active = `dev-${new Date().toISOString().slice(0, 10).replaceAll('-', '')}-${randomBytes(3).toString('hex')}`;
      const key = randomBytes(KEY_BYTES);
      keys.set(active, key);
      generated[active] = key.toString('base64');
      await writeFileAtomic(source.file, serialize({ activeKeyId: active, keys: generated }), { mode: 0o600 });
      source.logger.warn(
        { file: source.file, keyId: active },
        'generated a development encryption key (loom.secrets.generateKeys=true); configure loom.secrets.keys in production',
      );
    }
    if (active === undefined) throw new KeyRingError('loom.secrets.activeKeyId must name the key that encrypts new values');
    if (!keys.has(active)) throw new KeyRingError(`the active key '${active}' is not in the key ring`);
    return new KeyRing(keys, active, source, generated);
  }

  /** Id of the key that encrypts new values. */
  get activeKeyId(): string {
    return this.active;
  }

  /** Encrypts a value with the active key; returns the encrypted text (without `###AES-`). */
  encrypt(plain: string): string {
    const key = this.keys.get(this.active) as Buffer;
    const header = headerFor(this.active);
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(header);
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([header, nonce, ciphertext, cipher.getAuthTag()]).toString('base64url');
  }

  /** Decrypts an encrypted text; throws SealedValueError when it is not authentic or its key is unknown. */
  decrypt(text: string): string {
    const { keyId, header, body } = parse(text);
    const key = this.keys.get(keyId);
    if (key === undefined) throw new SealedValueError(`encrypted with key '${keyId}', which is not in the key ring`);
    if (body.length < NONCE_BYTES + TAG_BYTES) throw new SealedValueError('encrypted value is truncated');
    const nonce = body.subarray(0, NONCE_BYTES);
    const tag = body.subarray(body.length - TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(header);
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(body.subarray(NONCE_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedValueError(`encrypted value failed authentication with key '${keyId}' (tampered, or not made by this key ring)`);
    }
  }

  /** Id of the key an encrypted text names, without decrypting it. */
  keyIdOf(text: string): string {
    return parse(text).keyId;
  }

  /**
   * Makes another key active: a configured key by id, or, without an id, a new random key
   * stored in the key ring file. Old keys stay in the ring, so existing values stay readable. `beforeCommit` is told
   * the new key's id once the rotation can go ahead and before anything changes; throwing refuses the rotation.
   */
  async rotate(keyId?: string, beforeCommit: (keyId: string) => Promise<void> = () => Promise.resolve()): Promise<string> {
    if (keyId !== undefined && keyId !== '') {
      if (!this.keys.has(keyId)) throw new KeyRingError(`key '${keyId}' is not in the key ring; add it as loom.secrets.keys.${keyId} first`);
      await beforeCommit(keyId);
      this.active = keyId;
      return keyId;
    }
    if (!this.source.generateKeys) {
      throw new KeyRingError('loom.secrets.generateKeys is false: rotate to a key you configured (add loom.secrets.keys.<id> and call RotateKey with that id)');
    }
    const id = `key-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
    const key = randomBytes(KEY_BYTES);
    const generated = { ...this.generated, [id]: key.toString('base64') };
    await beforeCommit(id);
    await writeFileAtomic(this.source.file, serialize({ activeKeyId: id, keys: generated }), { mode: 0o600 });
    Object.assign(this.generated, generated);
    this.keys.set(id, key);
    this.active = id;
    return id;
  }

  /** Every key's bytes, for registration with the log redactor. */
  secrets(): string[] {
    return [...this.keys.values()].map((key) => key.toString('base64'));
  }
}

function headerFor(keyId: string): Buffer {
  const id = Buffer.from(keyId, 'utf8');
  return Buffer.concat([Buffer.from([FORMAT_VERSION, id.length]), id]);
}

function parse(text: string): { keyId: string; header: Buffer; body: Buffer } {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) throw new SealedValueError('encrypted value is not base64url text');
  const bytes = Buffer.from(text, 'base64url');
  if (bytes[0] !== FORMAT_VERSION) throw new SealedValueError('encrypted value has an unknown format');
  const idLength = bytes[1] ?? 0;
  const header = bytes.subarray(0, 2 + idLength);
  if (idLength === 0 || header.length < 2 + idLength) throw new SealedValueError('encrypted value is truncated');
  return { keyId: header.subarray(2).toString('utf8'), header, body: bytes.subarray(2 + idLength) };
}

function decodeKey(id: string, base64: string): Buffer {
  if (!KEY_ID.test(id)) throw new KeyRingError(`key id '${id}' must be 1-64 characters of A-Z a-z 0-9 _ . -`);
  const key = Buffer.from(base64, 'base64');
  if (key.length !== KEY_BYTES) throw new KeyRingError(`key '${id}' must be base64 of exactly 32 bytes`);
  return key;
}

function singleKey(keys: Readonly<Record<string, string>>): string | undefined {
  const ids = Object.keys(keys);
  return ids.length === 1 ? ids[0] : undefined;
}

function serialize(file: KeyRingFile): string {
  return `${JSON.stringify(file, null, 2)}\n`;
}

async function readKeyRingFile(path: string): Promise<KeyRingFile | undefined> {
  let text: string;
  try {
    const info = await stat(path);
    if ((info.mode & 0o077) !== 0) {
      throw new KeyRingError(`key ring file ${path} is readable by others (mode ${(info.mode & 0o777).toString(8)}); run chmod 600 on it`);
    }
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<KeyRingFile>;
    if (typeof parsed.activeKeyId !== 'string' || typeof parsed.keys !== 'object' || parsed.keys === null) throw new TypeError('shape');
    return { activeKeyId: parsed.activeKeyId, keys: parsed.keys };
  } catch (error) {
    throw new KeyRingError(`key ring file ${path} is not valid: expected {"activeKeyId": "...", "keys": {"<id>": "<base64>"}}`, { cause: error });
  }
}
