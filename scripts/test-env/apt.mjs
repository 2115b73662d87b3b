// Debian packages the tests need, installed with apt-get when missing (as root, or through sudo).
import { spawnSync } from 'node:child_process';
import { TestEnvError, log } from './log.mjs';

/** True when dpkg reports the package as installed. */
export function isInstalled(name) {
  const result = spawnSync('dpkg-query', ['-W', '-f=${Status}', name], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.includes('install ok installed');
}

let updated = false;

/** Installs those of `packages` that are missing, with one `apt-get update` per process at most. */
export function ensurePackages(packages) {
  const missing = packages.filter((name) => !isInstalled(name));
  if (missing.length === 0) return;
  const asRoot = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  const apt = (args) => {
    const [command, ...rest] = [...asRoot, 'apt-get', ...args];
    const result = spawnSync(command, rest, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (result.error !== undefined || result.status !== 0) {
      throw new TestEnvError(
        `apt-get ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`}): install ${missing.join(', ')} by hand, as root`,
      );
    }
  };
  log(`installing Debian packages: ${missing.join(', ')}`);
  if (!updated) {
    apt(['update', '-qq']);
    updated = true;
  }
  apt(['install', '-y', '-qq', '--no-install-recommends', ...missing]);
}
