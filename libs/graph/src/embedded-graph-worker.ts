// The worker module of the embedded graph (startEmbeddedGraph): PGlite with Apache AGE, in a thread of its own.
import { age } from '@electric-sql/pglite-age';
import { serveEmbeddedPostgresWorker } from '@loom/postgres/worker';

serveEmbeddedPostgresWorker({ age });
