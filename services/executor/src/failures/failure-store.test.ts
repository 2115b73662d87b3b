import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { recordId } from './failure-store.js';

describe('a failed message record id', () => {
  it('is the one records were kept under before: the first 32 hex digits of the SHA-256 of instance, NUL, message id', () => {
    const before = (instance: string, messageId: string): string =>
      createHash('sha256').update(instance).update('\0').update(messageId).digest('hex').slice(0, 32);
    for (const [instance, messageId] of [
      ['transform_0b3f6c1e-8a7d-4a55-9c1e-2f1d5e6a7b8c', 'm-1'],
      ['Check_1', 'ünïcode/1 2'],
      ['', ''],
    ] as const) {
      expect(recordId(instance, messageId)).toBe(before(instance, messageId));
    }
  });
});
