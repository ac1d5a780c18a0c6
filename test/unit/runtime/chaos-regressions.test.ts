import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel, transcriptStats } from '../../../lib/agent/scripted-model.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import type { Kick } from '../../../lib/core/messages.ts';
import { type Failpoint, FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { sweep } from '../../../lib/runtime/sweeper.ts';
import { invocation, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

/**
 * Regression tests for violations the chaos suite found (test/chaos). Each reproduces one with
 * the smallest setup: the in-memory twins and crashes thrown at named failpoints.
 */

const LEASE_TTL_MS = 200;
const config = { leaseTtlMs: LEASE_TTL_MS, reserveMs: 50, retentionDays: 1, sweepGraceMs: LEASE_TTL_MS };

/** Runs a kick the way a crashing worker would: a FailpointCrash ends the leg with its lease held. */
async function runOrCrash(kick: Kick, deps: Parameters<typeof runKick>[2]) {
  try {
    return await runKick(kick, invocation(60_000, deps.clock), deps);
  } catch (error) {
    if (error instanceof FailpointCrash) return `crashed at ${error.failpoint}`;
    throw error;
  }
}

describe('the step runner under repeated crashes', () => {
  it('publishes the journaled outcome, not a second crash-loop outcome, when recoveries pass the cap after the outcome', async () => {
    // Arrange: the turn finishes, the worker dies before publishing, then a recovery dies too.
    const crashes: Failpoint[] = ['between-outcome-and-publish', 'after-marker'];
    const agent = defineAgent({
      name: 'quick',
      instructions: 'Answer at once.',
      model: scriptedModel({ script: () => ({ final: 'done' }) }),
      limits: { maxRecoveries: 1 },
    });
    const { deps, store, results, clock } = makeTestDeps([agent], {
      config,
      failpoint: async (name) => {
        if (crashes[0] === name) throw new FailpointCrash(crashes.shift() as Failpoint);
      },
    });
    await acceptTicket(ticketBody('quick', 'T-1', 'go'), undefined, deps);
    const session = { tenant: 'default', agent: 'quick', id: deriveSessionId('default', 'quick', 'T-1') };

    // Act
    const legs = [await runOrCrash({ v: 1, session, reason: 'first' }, deps)];
    while (legs.at(-1)?.startsWith('crashed')) {
      clock.advance(LEASE_TTL_MS + 50);
      legs.push(await runOrCrash({ v: 1, session, reason: 'recovery' }, deps));
    }

    // Assert
    expect(legs).toEqual(['crashed at between-outcome-and-publish', 'crashed at after-marker', 'finished']);
    const outcomes = (await store.readJournal(session)).filter((e) => e.kind === 'outcome');
    expect(outcomes.map((e) => e.data)).toEqual([{ status: 'completed', output: 'done' }]);
    expect(results.bodies.map((r) => r.status)).toEqual(['completed']);
  });

  it('never fails a turn as a crash loop while every recovered leg makes progress before it dies', async () => {
    // Arrange: each leg dies right after its first step is journaled, before its first renewal.
    const agent = defineAgent({
      name: 'stepper',
      instructions: 'Take five steps.',
      model: scriptedModel({
        script: (messages) => {
          const { toolResults } = transcriptStats(messages);
          return toolResults >= 3
            ? { final: 'walked' }
            : { toolCalls: [{ id: `step-${toolResults}`, name: 'step', input: {} }] };
        },
      }),
      tools: [
        defineTool({
          name: 'step',
          description: 'Takes a step.',
          input: z.object({}),
          effect: 'pure',
          maxDurationMs: 100,
          run: async () => 'ok',
        }),
      ],
      limits: { maxRecoveries: 1 },
    });
    let appendsThisLeg = 0;
    let legsToCrash = 4;
    const { deps, store, results, clock } = makeTestDeps([agent], {
      config,
      failpoint: async (name) => {
        if (name !== 'after-append' || legsToCrash === 0) return;
        // The marker is the leg's first append; its first step is the second.
        if (++appendsThisLeg === 2) {
          legsToCrash--;
          throw new FailpointCrash(name);
        }
      },
    });
    await acceptTicket(ticketBody('stepper', 'T-2', 'go'), undefined, deps);
    const session = { tenant: 'default', agent: 'stepper', id: deriveSessionId('default', 'stepper', 'T-2') };

    // Act
    const legs: string[] = [];
    for (let reason: Kick['reason'] = 'first'; legs.at(-1) !== 'finished' && legs.length < 10; reason = 'recovery') {
      if (reason === 'recovery') clock.advance(LEASE_TTL_MS + 50);
      appendsThisLeg = 0;
      legs.push(await runOrCrash({ v: 1, session, reason }, deps));
    }

    // Assert
    expect(legs.filter((l) => l.startsWith('crashed'))).toHaveLength(4);
    expect(legs.at(-1)).toBe('finished');
    expect(results.bodies.map((r) => [r.status, r.error])).toEqual([['completed', undefined]]);
    expect((await store.readJournal(session)).filter((e) => e.kind === 'outcome')).toHaveLength(1);
  });

  it('the sweeper backs off a due session it already kicked, so a backlog does not become a kick storm', async () => {
    // Arrange: twenty sessions whose first kicks wait in a backed-up queue: due, never acquired.
    const { deps, store, workQueue, clock } = makeTestDeps([]);
    const now = clock.now();
    for (let i = 0; i < 20; i++) {
      await store.createSession({
        key: { tenant: 'default', agent: 'backlog', id: deriveSessionId('default', 'backlog', `s${i}`) },
        ticketId: `t${i}`,
        activeTurnId: `t${i}`,
        traceId: '0af7651916cd43dd8448eb211c80319c',
        now,
        sweepAt: now - 1,
      });
    }

    // Act: a one-second window polled every 20 ms (50 polls), sessions stalled after 400 ms.
    const swept = await sweep(
      { windowMs: 1_000, intervalMs: 20, stalledAfterMs: 400, remainingMs: () => 60_000 },
      deps,
    );

    // Assert: each is kicked on the first poll, then again only after a growing gap.
    expect(swept.polls).toBeGreaterThan(20);
    const kicksPerSession = new Map<string, number>();
    for (const kick of workQueue.bodies)
      kicksPerSession.set(kick.session.id, (kicksPerSession.get(kick.session.id) ?? 0) + 1);
    expect(kicksPerSession.size).toBe(20);
    expect(Math.max(...kicksPerSession.values())).toBeLessThanOrEqual(3);
  });

  it('does not fail a turn as "cannot fit" because legs before it died: only idle yields count', async () => {
    // Arrange: two legs die right after their markers; the third starts late in its batch.
    const crashes: Failpoint[] = ['after-marker', 'after-marker'];
    const agent = defineAgent({
      name: 'late',
      instructions: 'Answer at once.',
      model: scriptedModel({ maxDurationMs: 1_000, script: () => ({ final: 'done' }) }),
    });
    const { deps, results, clock } = makeTestDeps([agent], {
      config,
      failpoint: async (name) => {
        if (crashes[0] === name) throw new FailpointCrash(crashes.shift() as Failpoint);
      },
    });
    await acceptTicket(ticketBody('late', 'T-4', 'go'), undefined, deps);
    const session = { tenant: 'default', agent: 'late', id: deriveSessionId('default', 'late', 'T-4') };
    await runOrCrash({ v: 1, session, reason: 'first' }, deps);
    clock.advance(LEASE_TTL_MS + 50);
    await runOrCrash({ v: 1, session, reason: 'recovery' }, deps);
    clock.advance(LEASE_TTL_MS + 50);

    // Act: 500 ms left, less than the model's declared maximum.
    const late = await runKick({ v: 1, session, reason: 'recovery' }, invocation(500, clock), deps);
    const next = await runKick(
      { v: 1, session, reason: 'continuation', fromEpoch: 3 },
      invocation(60_000, clock),
      deps,
    );

    // Assert
    expect([late, next]).toEqual(['yielded', 'finished']);
    expect(results.bodies.map((r) => r.status)).toEqual(['completed']);
  });
});
