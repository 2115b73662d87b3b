import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A throwaway certificate authority and the certificates it issued, as PEM files in a temporary directory. */
export interface TestCertificates {
  /** The directory of the files: `ca.crt`, and `<name>.crt` and `<name>.key` for each certificate. */
  readonly directory: string;
  /** The path of a file of the directory (`ca.crt`, `localhost.key`). */
  path(file: string): string;
  /** The content of a file of the directory. */
  read(file: string): Buffer;
  /** Removes the directory. */
  remove(): void;
}

/** A certificate to issue: its common name (also its file name) and, for a server, the names it is valid for. */
export interface TestCertificate {
  readonly name: string;
  /** Subject alternative names, e.g. `DNS:localhost,IP:127.0.0.1`. */
  readonly altNames?: string;
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/**
 * Makes a CA valid for a day and issues one certificate (P-256 key) per entry, signed by it, with the
 * openssl command line. A server certificate for loopback: `{ name: 'localhost', altNames: 'DNS:localhost,IP:127.0.0.1' }`.
 */
export function testCertificates(certificates: readonly TestCertificate[]): TestCertificates {
  const directory = mkdtempSync(join(tmpdir(), 'loom-certificates-'));
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: directory, stdio: 'ignore' });
  };
  openssl('req', '-x509', ...EC_KEY, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=loom test CA', '-days', '1');
  for (const { name, altNames } of certificates) {
    openssl('req', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    const extensions = altNames === undefined ? [] : ['-extfile', `${name}.ext`];
    if (altNames !== undefined) writeFileSync(join(directory, `${name}.ext`), `subjectAltName=${altNames}\n`);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', ...extensions);
  }
  return {
    directory,
    path: (file) => join(directory, file),
    read: (file) => readFileSync(join(directory, file)),
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}
