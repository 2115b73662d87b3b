import { run } from './cli.js';
import { exitAfterOutput, exitWhenOutputCloses } from './output.js';

exitWhenOutputCloses();
await exitAfterOutput(await run(process.argv.slice(2)));
