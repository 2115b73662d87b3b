import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { graphQueryArguments, writeEmbeddedGraphResource } from '../src/index.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('the embedded graph of a loom process', () => {
  it('is written as a resource file at the port logged last', () => {
    const directory = mkdtempSync(join(tmpdir(), 'loom-testing-graph-'));
    directories.push(directory);
    const logLines = [
      JSON.stringify({ msg: 'embedded graph started', port: 5001 }),
      JSON.stringify({ msg: 'serving', port: 8100 }),
      JSON.stringify({ msg: 'embedded graph started', port: 5002 }),
    ];
    const file = writeEmbeddedGraphResource(join(directory, 'graph.json'), logLines, 'people_graph');
    expect(file).toBe(join(directory, 'graph.json'));
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      resource: { qualifiedName: 'loom.resources.graph.AgeDatabase' },
      parameters: { host: '127.0.0.1', port: 5002, user: 'postgres', graph: 'people_graph' },
    });
  });

  it('is refused, writing nothing, when the process logged no embedded graph', () => {
    const file = join(tmpdir(), 'loom-testing-never-written.json');
    expect(() => writeEmbeddedGraphResource(file, [JSON.stringify({ msg: 'serving', port: 8100 })], 'g')).toThrow("logged no 'embedded graph' line");
    expect(() => readFileSync(file)).toThrow(/ENOENT/);
  });

  it('is queried as JSON rows', () => {
    expect(graphQueryArguments('/tmp/graph.json', 'RETURN 1 AS one')).toEqual([
      'graph',
      'query',
      '--resource',
      '/tmp/graph.json',
      '--output',
      'json',
      'RETURN 1 AS one',
    ]);
  });
});
