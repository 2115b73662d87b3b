import { BlockList, isIP } from 'node:net';
import { SkillSettingsError, UnprocessableError } from './errors.js';

/** Ranges no fetch may reach unless allowed: loopback, private, link-local (cloud metadata), shared, reserved, multicast. */
const BLOCKED_IPV4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

const BLOCKED_IPV6: ReadonlyArray<readonly [string, number]> = [
  ['::', 128],
  ['::1', 128],
  // NAT64 and IPv4-compatible forms can carry any IPv4 address, private ones included
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
];

/** The connected address is one the fetch policy refuses; answered as 422 naming the request field. */
export class AddressRefusedError extends UnprocessableError {
  constructor(
    readonly address: string,
    readonly host: string,
    field: string,
  ) {
    super(
      'address_refused',
      `refused to fetch from ${host === address ? address : `${host} (${address})`}: loopback, private, link-local and metadata addresses are not allowed`,
      { field },
    );
  }
}

/**
 * Decides which addresses a skill may connect to. Everything public is allowed; the blocked
 * ranges above are refused unless a host name or an address range is on the allow-list.
 */
export class AddressPolicy {
  private readonly blocked = new BlockList();
  private readonly allowedRanges = new BlockList();
  private readonly allowedHosts = new Set<string>();

  /** `allow` entries are host names (`localhost`), addresses (`127.0.0.1`) or ranges (`10.0.0.0/8`, `::1/128`). */
  constructor(allow: readonly string[] = []) {
    for (const [address, prefix] of BLOCKED_IPV4) this.blocked.addSubnet(address, prefix, 'ipv4');
    for (const [address, prefix] of BLOCKED_IPV6) this.blocked.addSubnet(address, prefix, 'ipv6');
    for (const entry of allow) this.addAllowed(entry);
  }

  /** True when a connection to `address`, reached through the name `host`, may be made. */
  allows(address: string, host: string): boolean {
    const normalized = unwrapMappedIpv4(address);
    const family = isIP(normalized) === 6 ? 'ipv6' : 'ipv4';
    if (this.allowedHosts.has(host.toLowerCase()) || this.allowedRanges.check(normalized, family)) return true;
    return !this.blocked.check(normalized, family);
  }

  /** Throws AddressRefusedError naming `field` when `address` may not be reached. */
  check(address: string, host: string, field: string): void {
    if (!this.allows(address, host)) throw new AddressRefusedError(address, host, field);
  }

  private addAllowed(entry: string): void {
    const text = entry.trim();
    if (text === '') return;
    const [address = '', prefixText] = text.split('/');
    const family = isIP(address);
    if (family === 0) {
      if (prefixText !== undefined) throw new SkillSettingsError('allowHosts', `'${text}' is neither a host name nor an address range`);
      this.allowedHosts.add(text.toLowerCase());
      return;
    }
    const max = family === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? max : Number(prefixText);
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) throw new SkillSettingsError('allowHosts', `'${text}' has a bad prefix length`);
    this.allowedRanges.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
}

/** `::ffff:10.0.0.1` → `10.0.0.1`, so a mapped address meets the IPv4 rules. */
function unwrapMappedIpv4(address: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted?.[1] !== undefined) return dotted[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex?.[1] === undefined || hex[2] === undefined) return address;
  const high = Number.parseInt(hex[1], 16);
  const low = Number.parseInt(hex[2], 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}
