import { FailedPreconditionError } from './errors.js';

/** Where a listener was told to listen, and the settings (configuration keys, options, flags) that told it. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
  /** The setting that chose the port: `server.port`, `loom.telemetry.prometheus.port`, `intake.options.port`. */
  readonly portSetting: string;
  /** The setting that chose the host, when one did (`server.host`); a host no setting chose is named by the port's. */
  readonly hostSetting?: string;
}

/**
 * A listener loom opens (its gRPC server, the Prometheus endpoint, a webhook) could not bind its address. The message
 * is one line naming the setting to change: `server.port 8100 is in use (EADDRINUSE): set server.port to a free port`.
 */
export class ListenError extends FailedPreconditionError {
  readonly host: string;
  readonly port: number;
  /** The setting to change: the host's for an address this machine does not have, else the port's. */
  readonly setting: string;
  /** The operating system's error code (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`), when the failure gave one. */
  readonly code: string | undefined;

  /**
   * `cause` is the listen's failure: a Node error (its `code`), or one that names the code only in its message
   * (grpc-js: `No address added … [listen EADDRINUSE: address already in use 127.0.0.1:8100]`).
   */
  constructor(address: ListenAddress, cause: unknown) {
    const code = errnoCodeOf(cause);
    const { text, setting } = explain(address, code, cause);
    super(text, { cause });
    this.host = address.host;
    this.port = address.port;
    this.setting = setting;
    this.code = code;
  }
}

function errnoCodeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' ? /\b(E(?:ADDRINUSE|ACCES|ADDRNOTAVAIL|PERM|INVAL|AFNOSUPPORT|NOTFOUND|AI_AGAIN))\b/.exec(message)?.[1] : undefined;
}

function explain(address: ListenAddress, code: string | undefined, cause: unknown): { text: string; setting: string } {
  const { host, port, portSetting } = address;
  const hostSetting = address.hostSetting ?? portSetting;
  switch (code) {
    case 'EADDRINUSE':
      return { setting: portSetting, text: `${portSetting} ${port} is in use (EADDRINUSE): set ${portSetting} to a free port` };
    case 'EACCES':
    case 'EPERM':
      return { setting: portSetting, text: `${portSetting} ${port} may not be bound by this user (${code}): set ${portSetting} to a port above 1023` };
    case 'EADDRNOTAVAIL':
      return {
        setting: hostSetting,
        text: `${hostSetting}: ${host} is not an address of this machine (${code}): set ${hostSetting} to one of its addresses, e.g. 127.0.0.1 or 0.0.0.0`,
      };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { setting: hostSetting, text: `${hostSetting}: ${host} does not resolve (${code}): set ${hostSetting} to an address of this machine` };
    default: {
      const reason = code ?? (cause instanceof Error ? cause.message : String(cause));
      return { setting: portSetting, text: `${portSetting} ${port} cannot be bound on ${host} (${reason}): check ${portSetting}` };
    }
  }
}
