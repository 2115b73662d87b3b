import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KeyRing, KeyRingError, type KeyRingSource, SealedValueError } from './key-ring.js';

const warnings: string[] = [];
const logger = { warn: (_fields: object, message: string) => warnings.push(message), info: () => undefined };

function source(overrides: Partial<KeyRingSource> = {}): KeyRingSource {
  return { configuredKeys: {}, file: join(mkdtempSync(join(tmpdir(), 'loom-keyring-')), 'keyring.json'), generateKeys: true, logger, ...overrides };
}

const k1 = randomBytes(32).toString('base64');
const k2 = randomBytes(32).toString('base64');

describe('KeyRing', () => {
  it('round-trips values with a fresh nonce each time', async () => {
    const ring = await KeyRing.load(source({ configuredKeys: { k1 }, configuredActiveKeyId: 'k1' }));
    const a = ring.encrypt('s3cret-Pässword');
    const b = ring.encrypt('s3cret-Pässword');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(ring.decrypt(a)).toBe('s3cret-Pässword');
    expect(ring.keyIdOf(a)).toBe('k1');
  });

  it('refuses a tampered value, a cut value and a value of an unknown key, each distinctly', async () => {
    const ring = await KeyRing.load(source({ configuredKeys: { k1 }, configuredActiveKeyId: 'k1' }));
    const text = ring.encrypt('value');
    const bytes = Buffer.from(text, 'base64url');
    bytes[bytes.length - 20] = (bytes[bytes.length - 20] ?? 0) ^ 1;
    expect(() => ring.decrypt(bytes.toString('base64url'))).toThrow(/failed authentication with key 'k1'/);
    expect(() => ring.decrypt(text.slice(0, 12))).toThrow(/truncated/);

    const other = await KeyRing.load(source({ configuredKeys: { k2 }, configuredActiveKeyId: 'k2' }));
    expect(() => other.decrypt(text)).toThrow(SealedValueError);
    expect(() => other.decrypt(text)).toThrow(/key 'k1', which is not in the key ring/);

    // Changing the key id in the header is caught by the authenticated data.
    const sameKeyOtherId = await KeyRing.load(source({ configuredKeys: { k1, kX: k1 }, configuredActiveKeyId: 'kX' }));
    const relabelled = Buffer.from(sameKeyOtherId.encrypt('value'), 'base64url');
    relabelled.write('k1', 2);
    expect(() => sameKeyOtherId.decrypt(relabelled.toString('base64url'))).toThrow(/failed authentication/);
  });

  it('generates a development key into a 0600 file and finds it again', async () => {
    const devSource = source();
    const ring = await KeyRing.load(devSource);
    expect(statSync(devSource.file).mode & 0o777).toBe(0o600);
    expect(warnings.at(-1)).toMatch(/generated a development encryption key/);
    const again = await KeyRing.load(devSource);
    expect(again.activeKeyId).toBe(ring.activeKeyId);
    expect(again.decrypt(ring.encrypt('x'))).toBe('x');
  });

  it('refuses to start without a configured key unless loom.secrets.generateKeys allows one, and writes no file', async () => {
    const productionSource = source({ generateKeys: false });
    await expect(KeyRing.load(productionSource)).rejects.toThrow(KeyRingError);
    await expect(KeyRing.load(productionSource)).rejects.toThrow(/loom\.secrets\.generateKeys=true/);
    expect(existsSync(productionSource.file)).toBe(false);
  });

  it('refuses a key ring file others can read', async () => {
    const loose = source();
    writeFileSync(loose.file, JSON.stringify({ activeKeyId: 'k1', keys: { k1 } }), { mode: 0o644 });
    await expect(KeyRing.load(loose)).rejects.toThrow(/readable by others \(mode 644\)/);
  });

  it('rotates to a generated key in development, keeping old values readable', async () => {
    const devSource = source();
    const ring = await KeyRing.load(devSource);
    const old = ring.encrypt('old');
    const next = await ring.rotate();
    expect(next).not.toBe(ring.keyIdOf(old));
    expect(ring.keyIdOf(ring.encrypt('new'))).toBe(next);
    expect(ring.decrypt(old)).toBe('old');
    const file = JSON.parse(readFileSync(devSource.file, 'utf8')) as { activeKeyId: string; keys: Record<string, string> };
    expect(file.activeKeyId).toBe(next);
    expect(Object.keys(file.keys)).toHaveLength(2);
  });

  it('rotates only to configured keys in production', async () => {
    const ring = await KeyRing.load(source({ generateKeys: false, configuredKeys: { k1, k2 }, configuredActiveKeyId: 'k1' }));
    await expect(ring.rotate()).rejects.toThrow(/rotate to a key you configured/);
    await expect(ring.rotate('k3')).rejects.toThrow(/'k3' is not in the key ring/);
    expect(await ring.rotate('k2')).toBe('k2');
  });
});
