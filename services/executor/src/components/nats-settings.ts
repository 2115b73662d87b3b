import { ValidationError } from '@loom/domain';
import { type NatsConnectionSettings } from '@loom/messaging';
import { type ComponentContext } from '../runtime/component.js';

/**
 * How a NATS connector reaches its servers, from its options: `servers` (comma-separated), and its token, credentials
 * and TLS (the secrets opened at start). A bad value is a ValidationError naming the option.
 */
export function natsConnectionSettings(context: ComponentContext): NatsConnectionSettings {
  const field = (name: string): string => `${context.name}.options.${name}`;
  const servers = context.options
    .string('servers')
    .split(',')
    .map((server) => server.trim())
    .filter((server) => server !== '');
  if (servers.length === 0) throw ValidationError.of(field('servers'), 'must name at least one nats:// or tls:// URL', 'MISSING_OPTION');
  const bad = servers.find((server) => !/^(?:nats|tls):\/\/\S+$/.test(server));
  if (bad !== undefined) throw ValidationError.of(field('servers'), 'must be comma-separated nats:// or tls:// URLs', 'INVALID_VALUE');
  const given = (name: string): string | undefined => {
    const value = context.options.optionalString(name);
    return value === undefined || value.trim() === '' ? undefined : value;
  };
  const [token, credentials, ca, cert, key] = ['token', 'credentials', 'tls_ca', 'tls_cert', 'tls_key'].map(given);
  if ((cert === undefined) !== (key === undefined)) {
    throw ValidationError.of(
      field(cert === undefined ? 'tls_cert' : 'tls_key'),
      "goes with the other of 'tls_cert' and 'tls_key': give both or neither",
      'INVALID_VALUE',
    );
  }
  const tls = ca === undefined && cert === undefined ? undefined : { ...(ca === undefined ? {} : { ca }), ...(cert === undefined ? {} : { cert, key }) };
  return {
    servers,
    ...(token === undefined ? {} : { token }),
    ...(credentials === undefined ? {} : { credentials }),
    ...(tls === undefined ? {} : { tls }),
  };
}

/** The name a connector's connection shows on the NATS servers: `loom <workflow>/<component>`. */
export function natsConnectionName(context: ComponentContext): string {
  return `loom ${context.workflowName}/${context.name}`;
}
