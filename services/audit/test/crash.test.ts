import { fileURLToPath } from 'node:url';
import { AuditClient } from '@loom/contracts';
import { call, createClient } from '@loom/service-kit';
import { startServiceProcess } from '@loom/service-kit/testing';
import { describe, expect, it } from 'vitest';
import { auditOverrides, AuditEventType, event, executorToken, logPath } from './harness.js';

/** The built audit service (its test target builds it first), run alone. */
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const ROUNDS = 20;
const WRITERS = 16;

describe('audit service under SIGKILL', () => {
  it(`keeps every acknowledged event and a verifiable chain (${ROUNDS} rounds, ${WRITERS} writers)`, { timeout: 240_000 }, async () => {
    const overrides = auditOverrides(logPath(), ['server.port=0', 'loom.telemetry.prometheus.port=0']);
    const acknowledged = new Map<number, string>();

    const verify = async (client: AuditClient): Promise<void> => {
      const stored = new Map<number, string>();
      let pageToken = '';
      do {
        const page = await call(client, 'query', { types: [], workflowName: '', since: undefined, until: undefined, pageSize: 1000, pageToken });
        for (const found of page.events) stored.set(found.sequence, found.hash);
        pageToken = page.nextPageToken;
      } while (pageToken !== '');
      for (const [sequence, hash] of acknowledged) expect(stored.get(sequence), `sequence ${sequence}`).toBe(hash);
      expect(await call(client, 'verify', {})).toMatchObject({ ok: true, firstBrokenSequence: 0 });
    };

    for (let round = 0; round <= ROUNDS; round++) {
      const child = await startServiceProcess(MAIN, overrides);
      const client = createClient(AuditClient, child.address, { token: executorToken, retry: false, deadlineMs: 5000 });
      await verify(client);
      if (round === ROUNDS) {
        client.close();
        child.process.kill('SIGKILL');
        break;
      }
      let stopped = false;
      let acknowledgedThisRound = 0;
      const writers = Array.from({ length: WRITERS }, async (_, writer) => {
        for (let index = 0; !stopped; index++) {
          try {
            const ack = await call(client, 'append', {
              event: event(AuditEventType.AUDIT_EVENT_TYPE_WORKFLOW_START, { workflowName: `round ${round} writer ${writer} #${index}` }),
            });
            acknowledged.set(ack.sequence, ack.hash);
            acknowledgedThisRound++;
          } catch {
            return; // killed: never acknowledged
          }
        }
      });
      // the kill lands at a random moment once appends are flowing (a slow machine may take a while for the first)
      for (let waited = 0; acknowledgedThisRound === 0 && waited < 20_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 400));
      await new Promise<void>((resolve) => {
        child.process.once('exit', () => resolve());
        child.process.kill('SIGKILL');
      });
      stopped = true;
      await Promise.all(writers);
      client.close();
    }
    expect(acknowledged.size).toBeGreaterThan(ROUNDS);
    console.log(
      `audit crash test: ${ROUNDS} SIGKILLs under ${WRITERS} concurrent writers, ${acknowledged.size} acknowledged events, all present, chain verified`,
    );
  });
});
