import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { cliIo } from './cli-io.js';

/** A signed-in operator's access token as `loom login` keeps it for later commands. */
export interface CachedToken {
  readonly accessToken: string;
  /** ISO time after which the token is not presented any more. */
  readonly expiresAt: string;
  readonly issuer: string;
}

/** Where the token is kept: `$LOOM_CREDENTIALS_FILE`, else `$XDG_CONFIG_HOME/loom/credentials.json` (`~/.config/...`). */
export function tokenCachePath(env: NodeJS.ProcessEnv = cliIo().env): string {
  const explicit = env.LOOM_CREDENTIALS_FILE;
  if (explicit !== undefined && explicit !== '') return explicit;
  const base = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config');
  return join(base, 'loom', 'credentials.json');
}

/** Keeps the token readable by this user only; the temp file beside the target makes the write atomic. */
export function saveToken(token: CachedToken, path: string = tokenCachePath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(token)}\n`, { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, path);
}

/** The cached token while it is valid for at least a few more seconds; otherwise nothing. */
export function loadToken(path: string = tokenCachePath(), now: Date = new Date()): CachedToken | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const token = JSON.parse(text) as Partial<CachedToken>;
  if (typeof token.accessToken !== 'string' || typeof token.expiresAt !== 'string' || typeof token.issuer !== 'string') return undefined;
  if (Date.parse(token.expiresAt) - now.getTime() < 10_000) return undefined;
  return token as CachedToken;
}

/** Forgets the cached token; nothing to forget is fine. */
export function forgetToken(path: string = tokenCachePath()): void {
  rmSync(path, { force: true });
}
