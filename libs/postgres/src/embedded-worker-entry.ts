// The worker module of startEmbeddedPostgresInWorker when it is given none: PGlite without extensions.
import { serveEmbeddedPostgresWorker } from './worker-server.js';

serveEmbeddedPostgresWorker();
