export { type ConsoleOptions, type RunningConsole, ConsoleServer, startConsole, sessionCookieName } from './console-server.js';
export { ApiError, SECURITY_HEADERS } from './http-errors.js';
export { COUNTS_INTERVAL_MS } from './api-routes.js';
export { DEFAULT_STATIC_DIRECTORY, StaticFiles } from './static-files.js';
