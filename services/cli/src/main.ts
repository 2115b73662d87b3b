import { run } from './cli.js';

process.exit(await run(process.argv.slice(2)));
