import { describe, expect, it } from 'vitest';
import { AddressPolicy, AddressRefusedError } from './address-policy.js';
import { SkillSettingsError } from './errors.js';

describe('AddressPolicy', () => {
  const policy = new AddressPolicy();

  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.254',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a00:1',
  ])('refuses %s by default', (address) => {
    expect(policy.allows(address, address)).toBe(false);
    expect(() => policy.check(address, 'example.org', 'url')).toThrow(AddressRefusedError);
  });

  it.each(['93.184.215.14', '172.32.0.1', '8.8.8.8', '2606:4700::1111'])('allows public %s', (address) => {
    expect(policy.allows(address, address)).toBe(true);
  });

  it('names the field and the host in the refusal', () => {
    try {
      policy.check('10.0.0.5', 'intranet.example', 'url');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(AddressRefusedError);
      expect((error as AddressRefusedError).toBody()).toMatchObject({ error: 'address_refused', field: 'url' });
      expect((error as Error).message).toContain('intranet.example (10.0.0.5)');
    }
  });

  it('lets an allow-list open host names, addresses and ranges', () => {
    const open = new AddressPolicy(['localhost', '127.0.0.1', '10.0.0.0/8', '::1']);
    expect(open.allows('127.0.0.2', 'localhost')).toBe(true);
    expect(open.allows('127.0.0.1', '127.0.0.1')).toBe(true);
    expect(open.allows('127.0.0.2', '127.0.0.2')).toBe(false);
    expect(open.allows('10.9.9.9', '10.9.9.9')).toBe(true);
    expect(open.allows('::1', '::1')).toBe(true);
    expect(open.allows('192.168.0.1', '192.168.0.1')).toBe(false);
  });

  it('refuses a malformed allow-list entry naming the setting', () => {
    expect(() => new AddressPolicy(['10.0.0.0/99'])).toThrow(SkillSettingsError);
    expect(() => new AddressPolicy(['intranet/8'])).toThrow(/allowHosts/);
  });
});
