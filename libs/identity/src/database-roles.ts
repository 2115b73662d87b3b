/** The prefix that marks a client role as a graph database role (the product's name, as the specification has it). */
export const NEO4J_ROLE_PREFIX = 'NEO4J_';

/**
 * The database roles among a token's roles: those starting with the prefix (compared
 * case-insensitively), the prefix removed and the rest lower-cased, so `NEO4J_Admin` and
 * `neo4j_ADMIN` both give `admin`. Other roles are ignored; each role appears once.
 */
export function databaseRoles(roles: readonly string[], prefix: string = NEO4J_ROLE_PREFIX): string[] {
  const wanted = prefix.toLowerCase();
  const mapped = new Set<string>();
  for (const role of roles) {
    if (role.length > prefix.length && role.toLowerCase().startsWith(wanted)) mapped.add(role.slice(prefix.length).toLowerCase());
  }
  return [...mapped];
}
