import { run } from './cli.js';
import { exitAfterOutput } from './output.js';

await exitAfterOutput(await run(process.argv.slice(2)));
