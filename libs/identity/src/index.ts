export {
  type IdentityProviderConfig,
  parseIdentityProviderConfig,
  readIdentityProviderConfig,
  IdentityProviderConfigError,
  issuerOf,
  endpointsOf,
} from './provider-config.js';
export { TokenValidator, TokenRejectedError, type TokenRejection, type TokenValidatorOptions, type VerifiedIdentity } from './token-validator.js';
export { databaseRoles, NEO4J_ROLE_PREFIX } from './database-roles.js';
