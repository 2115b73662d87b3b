import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import neo4j from 'neo4j-driver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { neo4jLauncherArguments, Neo4jLauncherMissingError, startNeo4j, type Neo4jTestServer } from '../src/index.js';

/** The Bolt version the server at host:port agrees to when offered 5.0 to 5.8 (the first bytes of any driver). */
async function boltHandshake(host: string, port: number): Promise<string> {
  const socket = connect(port, host);
  try {
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    // magic preamble, then four version proposals: 5.8 with a range of 8 minor versions below it, and three empty
    socket.write(Buffer.from([0x60, 0x60, 0xb0, 0x17, 0, 8, 8, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    const reply = await new Promise<Buffer>((resolve, reject) => socket.once('data', resolve).once('error', reject));
    return `${reply[3]}.${reply[2]}`;
  } finally {
    socket.destroy();
  }
}

describe('startNeo4j', () => {
  let server: Neo4jTestServer;

  beforeAll(async () => {
    // a server of this file's own rather than one borrowed from the run's pool (neo4j-pool.test.ts tests lending): the
    // launcher's own clear() is tested on it, and the close test stops it, so the file starts two JVMs, not three
    server = await startNeo4j({ own: true });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers Bolt 5 on a loopback port, with a password of its own for neo4j', async () => {
    const url = new URL(server.uri);
    expect(url.protocol).toBe('bolt:');
    expect(url.hostname).toBe('127.0.0.1');
    expect(await boltHandshake(url.hostname, Number(url.port))).toMatch(/^5\.\d$/);
    expect(server.user).toBe('neo4j');
    expect(server.password).toMatch(/^[0-9a-f]{24}$/);
  });

  it('clears the database on request, as often as asked', async () => {
    const driver = neo4j.driver(server.uri, neo4j.auth.basic(server.user, server.password));
    try {
      const count = async (): Promise<number> => {
        const result = await driver.executeQuery('MATCH (n) RETURN count(n) AS nodes');
        return (result.records[0]?.get('nodes') as { toNumber(): number }).toNumber();
      };
      await driver.executeQuery('UNWIND range(1, 25) AS i CREATE (:Page {i: i})-[:LINKS]->(:Page {i: i + 100})');
      expect(await count()).toBe(50);
      await server.clear();
      expect(await count()).toBe(0);
      // two at once, then the database still takes writes and holds only them
      await driver.executeQuery('CREATE (:Page {i: 1})');
      await Promise.all([server.clear(), server.clear()]);
      expect(await count()).toBe(0);
      await driver.executeQuery('CREATE (:Page {i: 2})');
      expect(await count()).toBe(1);
    } finally {
      await driver.close();
    }
  });

  // after the tests that use the file's server: it stops that one
  it('close stops the JVM, removes its directory, and may be called twice', async () => {
    const url = new URL(server.uri);
    expect(existsSync(server.home)).toBe(true);
    await Promise.all([server.close(), server.close()]);
    await expect(boltHandshake(url.hostname, Number(url.port))).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(existsSync(server.home)).toBe(false);
  }, 180_000);

  // starts a second JVM, as startNeo4j would: its limit is for a loaded machine, not a measure

  it('the launcher stops Neo4j and removes its directory by itself when its parent goes away (stdin closes)', async () => {
    const home = await mkdtemp(join(tmpdir(), 'loom-neo4j-orphan-'));
    const jvm = spawn('java', neo4jLauncherArguments(home), { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => jvm.once('close', resolve));
    jvm.stdin.write('orphan-password\n');
    const lines = createInterface({ input: jvm.stdout })[Symbol.asyncIterator]();
    const ready = (await lines.next()).value as string;
    expect(ready).toMatch(/^READY bolt:\/\/127\.0\.0\.1:\d+$/);
    expect(existsSync(join(home, 'data'))).toBe(true);

    jvm.stdin.destroy(); // what the operating system does to the pipe when the test process dies
    expect(await exited).toBe(0);
    expect(existsSync(home)).toBe(false);
  }, 180_000);

  it('refuses a JVM tuning it does not know, naming the option, before it starts anything', async () => {
    const error = await startNeo4j({ jvm: 'fastest' as never }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe("startNeo4j: jvm must be one of quick-start, throughput, got 'fastest'");
  });

  it('without LOOM_NEO4J_LAUNCHER says how to get it, instead of skipping', async () => {
    const saved = process.env['LOOM_NEO4J_LAUNCHER'];
    delete process.env['LOOM_NEO4J_LAUNCHER'];
    try {
      const error = await startNeo4j({ own: true }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(Neo4jLauncherMissingError);
      expect((error as Error).message).toMatch(/npm test.*scripts\/test-env\/neo4j\.mjs/s);
    } finally {
      process.env['LOOM_NEO4J_LAUNCHER'] = saved;
    }
  });
});
