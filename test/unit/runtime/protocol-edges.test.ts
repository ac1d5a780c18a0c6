import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { META_SK } from '../../../lib/adapters/session-item-codec.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { LeaseLostError } from '../../../lib/core/errors.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { type Clock, systemClock } from '../../../lib/ports/clock.ts';
import { itemTtlSeconds } from '../../../lib/runtime/deps.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { Heartbeat } from '../../../lib/runtime/heartbeat.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

/** The "Also" items of issue 13: smaller protocol edges, each with its regression. */

/** A manual clock whose readers can be made to see a jump that fires no timer (a slow write). */
class SkewedClock extends ManualClock {
  skewMs = 0;
  override now(): number {
    return super.now() + this.skewMs;
  }
}

const keyOf = (agent: string, ticketId: string) => ({
  tenant: 'default',
  agent,
  id: deriveSessionId('default', agent, ticketId),
});

const onceTool = (run: (key: string) => unknown, reconcile?: (key: string, signal?: AbortSignal) => unknown) =>
  defineTool({
    name: 'refund',
    description: 'Refunds.',
    input: z.object({ id: z.string() }),
    effect: 'once',
    maxDurationMs: 200,
    run: async (_input, ctx) => run(ctx.idempotencyKey),
    ...(reconcile
      ? {
          reconcile: async (key: string, _input: unknown, signal?: AbortSignal) =>
            reconcile(key, signal) as { verdict: 'notDone' },
        }
      : {}),
  });

async function waitFor(what: string, check: () => boolean | Promise<boolean>, deadlineMs = 10_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('protocol edges (issue 13, "Also")', () => {
  it('gives two tool calls with the same id in one response distinct ids, so each once-only call has its own key', async () => {
    const keys: string[] = [];
    const agent = lookupAgent({
      tools: [onceTool((key) => keys.push(key))],
      script: (messages) =>
        messages.length < 3
          ? {
              toolCalls: [
                { id: 'r', name: 'refund', input: { id: 'a' } },
                { id: 'r', name: 'refund', input: { id: 'b' } },
              ],
            }
          : { final: 'done' },
    });
    const { deps, store, results } = makeTestDeps([agent]);
    await acceptTicket(ticketBody('lookup-agent', 'T-dup', {}), undefined, deps);
    await drain(deps);

    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(2);
    const journal = await store.readJournal(keyOf('lookup-agent', 'T-dup'));
    const model = journal.find((e) => e.kind === 'model');
    expect(model?.kind === 'model' && model.data.toolCalls.map((c) => c.id)).toEqual(['r', 'r_2']);
    expect(results.bodies[0]).toMatchObject({ status: 'completed', output: 'done' });
  });

  it('stops as "lease lost" when its leg marker meets a newer owner’s marker', async () => {
    const { deps, store, telemetry } = makeTestDeps([lookupAgent()]);
    const key = keyOf('lookup-agent', 'T-newer');
    await acceptTicket(ticketBody('lookup-agent', 'T-newer', { ids: ['a'] }), undefined, deps);
    let raced = false;
    // A newer owner's marker wins the seq this leg's marker goes for.
    store.beforeWrite = async (operation) => {
      if (operation !== 'append' || raced) return;
      raced = true;
      const record = await store.getSession(key);
      await store.append(key, {
        seq: 1,
        kind: 'leg',
        epoch: (record?.epoch ?? 0) + 1,
        writeId: 'newer-owner',
        at: Date.now(),
        data: {
          owner: 'newer',
          reason: 'recovery',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        },
      });
    };
    const kick = { v: 1 as const, session: key, reason: 'first' as const };

    expect(await runKick(kick, invocation(), deps)).toBe('lease-lost');
    expect(telemetry.lines.some((l) => l.message === 'stale owner stopped')).toBe(true);
  });

  it('re-checks the lease right before a once-only call starts, and does not start it when the lease would not outlive it', async () => {
    let calls = 0;
    const agent = lookupAgent({
      tools: [onceTool(() => calls++)],
      script: (messages) =>
        messages.length < 3 ? { toolCalls: [{ id: 'r', name: 'refund', input: { id: 'a' } }] } : { final: 'done' },
    });
    const clock = new SkewedClock();
    const { deps, workQueue } = makeTestDeps([agent], {
      clock,
      // The watermark's write took so long that the lease, renewed before it, no longer outlives the call.
      failpoint: async (name) => {
        if (name === 'after-intent') clock.skewMs = 1_400;
      },
    });
    await acceptTicket(ticketBody('lookup-agent', 'T-late', {}), undefined, deps);
    const kick = workQueue.receive()[0]!.body;

    expect(await runKick(kick, invocation(60_000, clock), deps)).toBe('yielded');
    expect(calls).toBe(0);
  });

  it('hands reconcile the leg’s abort signal', async () => {
    const signals: unknown[] = [];
    const agent = lookupAgent({
      tools: [
        onceTool(
          () => 'refunded',
          (_key, signal) => {
            signals.push(signal);
            return { verdict: 'notDone' };
          },
        ),
      ],
      script: (messages) =>
        messages.length < 3 ? { toolCalls: [{ id: 'r', name: 'refund', input: { id: 'a' } }] } : { final: 'done' },
    });
    const crash = new FailpointCrash('after-intent');
    let crashes = 0;
    const { deps, clock } = makeTestDeps([agent], {
      failpoint: async (name) => {
        if (name === 'after-intent' && crashes++ === 0) throw crash;
      },
    });
    const key = keyOf('lookup-agent', 'T-sig');
    await acceptTicket(ticketBody('lookup-agent', 'T-sig', {}), undefined, deps);
    await expect(drain(deps)).rejects.toBe(crash);
    clock.advance(deps.config.leaseTtlMs + 1);
    expect(await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps)).not.toBe(
      'dropped',
    );

    expect(signals).toHaveLength(1);
    expect(signals[0]).toBeInstanceOf(AbortSignal);
  });

  it('counts the heartbeat deadline from when the last good renewal was sent, not when its answer came back', async () => {
    let now = 100_000;
    // Time stands still unless the test moves it; timers fire at once, in real time.
    const clock: Clock = { now: () => now, sleep: async () => {}, setTimer: (_ms, fn) => systemClock.setTimer(0, fn) };
    const ttlMs = 2_000;
    let renewals = 0;
    let lostAt: number | undefined;
    const heartbeat = new Heartbeat(
      {
        ttlMs,
        clock,
        renew: async (until) => {
          renewals++;
          if (renewals === 1) {
            // A slow answer: sent at 100 000, back 500 ms later.
            now += 500;
            return { until } as never;
          }
          // The next renewal fails on a throttle, at 100 800.
          now = 100_800;
          throw new Error('ThrottlingException');
        },
        onRenewed: () => {},
        onLost: (error) => {
          expect(error).toBeInstanceOf(LeaseLostError);
          lostAt = now;
        },
      },
      now + ttlMs,
    );
    await heartbeat.renewNow();
    heartbeat.start();
    // Sent at 100 000, the lease holds until 102 000 less 1 000 of clock skew: a retry at
    // 100 800 + 250 would land past 101 000, so the lease counts as lost now.
    await waitFor('the heartbeat to give the lease up', () => lostAt !== undefined);
    await heartbeat.stop();
    expect(lostAt).toBe(100_800);
  });
  it('moves the session record’s expiry forward when a leg acquires it and when it waits for a human', async () => {
    // Arrange: retention 1 day; the session is 20 hours old when its first leg runs.
    const HOUR_MS = 3_600_000;
    const approve = defineTool({
      name: 'approve-me',
      description: 'Needs a human.',
      input: z.object({}),
      effect: 'pure',
      maxDurationMs: 200,
      requiresApproval: true,
      run: async () => ({ ok: true }),
    });
    const agent = lookupAgent({
      tools: [approve],
      script: () => ({ toolCalls: [{ id: 'a', name: 'approve-me', input: {} }] }),
    });
    const { deps, store, clock } = makeTestDeps([agent]);
    const key = keyOf('lookup-agent', 'T-ttl');
    await acceptTicket(ticketBody('lookup-agent', 'T-ttl', {}), undefined, deps);
    const createdTtl = Number(store.rawItem(key, META_SK)?.ttl);
    clock.set(clock.now() + 20 * HOUR_MS);
    const legStartedTtl = Math.floor(clock.now() / 1000) + 24 * 3600;

    // Act
    await drain(deps);

    // Assert: the waiting record expires a day after its last leg, not a day after its creation.
    expect((await store.getSession(key))?.state).toBe('waiting');
    expect(Number(store.rawItem(key, META_SK)?.ttl)).toBeGreaterThanOrEqual(legStartedTtl);
    expect(legStartedTtl - createdTtl).toBeGreaterThanOrEqual(20 * 3600);
  });
  it('moves the expiry of every item of a session forward before its record’s could pass it, so its first entries stay', async () => {
    // Arrange: retention 1 day, so items live a day and a half. The first leg runs 13 hours after
    // intake wrote the turn: the record's new expiry would come within 3 hours (an eighth of a
    // retention) of the items'.
    const { deps, store, clock } = makeTestDeps([lookupAgent()]);
    const key = keyOf('lookup-agent', 'T-items');
    await acceptTicket(ticketBody('lookup-agent', 'T-items', { ids: ['a'] }), undefined, deps);
    const turnTtl = Number(store.rawItem(key, 'T#T-items')?.ttl);
    clock.set(clock.now() + 13 * 3_600_000);
    const refreshedAt = clock.now();

    // Act
    await drain(deps);

    // Assert
    const refreshedTtl = Number(store.rawItem(key, 'T#T-items')?.ttl);
    expect(refreshedTtl).toBe(itemTtlSeconds(deps.config, refreshedAt));
    expect(refreshedTtl - turnTtl).toBe(13 * 3600);
    expect(refreshedTtl).toBeGreaterThan(Number(store.rawItem(key, META_SK)?.ttl));
    expect(await store.getSession(key)).toMatchObject({ expiryRefreshedAt: refreshedAt, retentionS: 24 * 3600 });
    expect(store.writes.refreshExpiry).toBe(1);
  });

  it('leaves the items’ expiry alone while it is well ahead of the record’s: no write per leg', async () => {
    // Arrange: the first leg runs 8 hours after intake; the items still outlive the record's new
    // expiry by 4 hours.
    const { deps, store, clock } = makeTestDeps([lookupAgent()]);
    const key = keyOf('lookup-agent', 'T-items-early');
    await acceptTicket(ticketBody('lookup-agent', 'T-items-early', { ids: ['a'] }), undefined, deps);
    const turnTtl = Number(store.rawItem(key, 'T#T-items-early')?.ttl);
    clock.set(clock.now() + 8 * 3_600_000);

    // Act
    await drain(deps);

    // Assert
    expect(store.writes.refreshExpiry).toBe(0);
    expect(Number(store.rawItem(key, 'T#T-items-early')?.ttl)).toBe(turnTtl);
    expect(turnTtl).toBeGreaterThan(Number(store.rawItem(key, META_SK)?.ttl));
  });
});
