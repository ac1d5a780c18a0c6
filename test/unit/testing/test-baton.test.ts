import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel, toolResults } from '../../../lib/agent/scripted-model.ts';
import { waitTool } from '../../../lib/agent/timer.ts';
import { StepError } from '../../../lib/core/errors.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import type { ChatMessage } from '../../../lib/ports/model-client.ts';
import { FAILPOINTS } from '../../../lib/runtime/failpoints.ts';
import { createTestBaton, type MockReply } from '../../../lib/testing/index.ts';

/** A model that must never be called: every test here mocks it. */
const unusedModel = scriptedModel({
  script: () => {
    throw new Error('the real model ran in a test that mocks it');
  },
});

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks an order up.',
  input: z.object({ id: z.string() }),
  effect: 'pure',
  maxDurationMs: 1_000,
  run: async () => {
    throw new Error('the real lookup ran in a test that mocks it');
  },
});

const refund = defineTool({
  name: 'refund',
  description: 'Refunds an order (a payment: once only).',
  input: z.object({ id: z.string(), amount: z.number() }),
  effect: 'once',
  maxDurationMs: 1_000,
  requiresApproval: ({ amount }) => amount > 100,
  approvalTimeoutMs: 3_600_000,
  run: async () => {
    throw new Error('the real refund ran in a test that mocks it');
  },
  reconcile: async () => ({ verdict: 'unknown' }),
});

const desk = defineAgent({
  name: 'desk',
  instructions: 'Look orders up, refund them, wait when asked.',
  model: unusedModel,
  tools: [lookup, refund, waitTool()],
});

const chat = defineAgent({ name: 'chat', instructions: 'Echo.', model: unusedModel, conversation: true });

/** The last user text of a transcript. */
const lastText = (transcript: readonly ChatMessage[]): string => {
  const content = transcript.at(-1)?.content[0];
  return content?.type === 'text' ? content.text : '';
};

/** A model that makes one call, then answers with its result. */
const oneCall =
  (name: string, input: unknown) =>
  (transcript: readonly ChatMessage[]): MockReply => {
    const [result] = toolResults(transcript).values();
    return result === undefined ? { toolCalls: [{ name, input }] } : `${name}: ${JSON.stringify(result.output)}`;
  };

describe('createTestBaton: mocks', () => {
  it("runs a one-shot session with a mocked tool in place of the tool's own run, keeping its schema", async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('lookup', { id: '42' }));
    const lookups = baton.mockTool('desk', 'lookup', ({ id }: { id: string }) => ({ id, status: 'shipped' }));

    // Act
    const run = await baton.start('desk', { text: 'where is 42?' });

    // Assert
    expect(await run.output()).toBe('lookup: {"id":"42","status":"shipped"}');
    expect(lookups.calls).toEqual([
      { input: { id: '42' }, idempotencyKey: expect.stringContaining(run.sessionId), sessionId: run.sessionId },
    ]);
    expect(baton.results).toMatchObject([{ sessionId: run.sessionId, status: 'completed' }]);
  });

  it("gives the nth model call of a session the nth reply of a list, and fails the turn past the list's end", async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk] });
    const model = baton.mockModel('desk', [{ toolCalls: [{ name: 'lookup', input: { id: '7' } }] }]);
    baton.mockTool('desk', 'lookup', () => 'found');

    // Act
    const run = await baton.start('desk', 'where is 7?');

    // Assert
    expect(model.calls).toHaveLength(2);
    expect(await run.outcome()).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('the mocked model of agent desk has no reply for model call 2: it was given 1'),
    });
  });

  it('waits out a retry backoff by itself: a tool that fails once and then succeeds completes in one action', async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('lookup', { id: '1' }));
    let attempts = 0;
    baton.mockTool('desk', 'lookup', () => {
      attempts++;
      if (attempts === 1) throw new StepError('the order service is down', { retryable: true });
      return 'found';
    });
    const before = baton.clock.now();

    // Act
    const run = await baton.start('desk', 'find 1');

    // Assert
    expect(await run.output()).toBe('lookup: "found"');
    expect(attempts).toBe(2);
    expect(baton.clock.now()).toBeGreaterThan(before);
  });

  it('refuses bad input with an error that names it, and runs nothing', async () => {
    const baton = createTestBaton({ agents: [desk] });

    await expect(baton.start('nobody', 'hi')).rejects.toThrow('unknown agent "nobody"');
    expect(() => baton.mockTool('desk', 'nothing', () => 1)).toThrow(
      'agent desk has no tool "nothing" (its tools: lookup, refund, wait)',
    );
    expect(() => baton.mockModel('nobody', [])).toThrow('no agent "nobody" in this test baton (agents: desk)');
    await expect(baton.advance('2 hours')).rejects.toThrow('duration "2 hours" is not a number with a unit');
    expect(() => baton.crash('nowhere' as 'mid-step')).toThrow('unknown crash point "nowhere"');
    expect(baton.results).toEqual([]);
  });
});

describe('createTestBaton: actions from inside a mock', () => {
  it('refuses advance from a mocked tool, naming what to use there, and the turn goes on', async () => {
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('lookup', { id: '1' }));
    let refusal: unknown;
    baton.mockTool('desk', 'lookup', async () => {
      refusal = await baton.advance('1m').catch((error: unknown) => error);
      return 'found';
    });
    const before = baton.clock.now();

    const run = await baton.start('desk', 'find 1');

    expect(String(refusal)).toContain('move time inside a call with baton.clock.advance(ms)');
    expect(baton.clock.now()).toBe(before);
    expect(await run.output()).toBe('lookup: "found"');
  });
});

describe('createTestBaton: a conversation', () => {
  it('takes two turns, each with its own outcome, and the transcript holds both in order', async () => {
    // Arrange
    const baton = createTestBaton({ agents: [chat] });
    baton.mockModel('chat', (transcript) => `you said ${lastText(transcript)}`);

    // Act
    const first = await baton.start('chat', 'hello');
    const second = await first.send('again');

    // Assert
    expect(await first.output()).toBe('you said hello');
    expect(await second.output()).toBe('you said again');
    expect((await baton.status(first.sessionId)).status).toBe('idle');
    expect((await second.transcript()).map((m) => [m.role, m.content[0]])).toEqual([
      ['user', { type: 'text', text: 'hello' }],
      ['assistant', { type: 'text', text: 'you said hello' }],
      ['user', { type: 'text', text: 'again' }],
      ['assistant', { type: 'text', text: 'you said again' }],
    ]);
    expect((await second.events()).map((e) => e.kind)).toContain('outcome');
  });
});

describe('createTestBaton: humans and messages', () => {
  it('denies a call with a reason: the tool never runs, and the model reads the denial', async () => {
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('refund', { id: '2', amount: 900 }));
    const refunds = baton.mockTool('desk', 'refund', () => 'refunded');
    const run = await baton.start('desk', 'refund order 2');

    await run.deny(undefined, 'over the limit');

    expect(refunds.calls).toEqual([]);
    expect(await run.output()).toContain('over the limit');
  });

  it('cancels a session that waits for a human', async () => {
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('refund', { id: '2', amount: 900 }));
    const run = await baton.start('desk', 'refund order 2');

    const answer = await run.cancel();

    expect(answer).toBe('requested');
    expect(await run.outcome()).toMatchObject({ status: 'cancelled' });
    await expect(run.approve()).rejects.toThrow(`session ${run.sessionId} has no call waiting for approval`);
  });

  it('takes a message a mocked tool sends into the running turn before the next model call', async () => {
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', (transcript) => {
      if (toolResults(transcript).size === 0) return { toolCalls: [{ name: 'lookup', input: { id: '1' } }] };
      const told = transcript.at(-1)?.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])) ?? [];
      return `told: ${told.join(', ')}`;
    });
    baton.mockTool('desk', 'lookup', async (_input, ctx) => {
      // The customer writes while the tool runs: the send returns once the message is accepted.
      await baton.send(ctx.sessionId, 'also check 5', { mode: 'inject' });
      return 'found';
    });

    const run = await baton.start('desk', 'find 1');

    expect(await run.output()).toBe('told: also check 5');
  });
});

describe('createTestBaton: the manual clock', () => {
  it('fires a durable timer only when advance passes it', async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('wait', { seconds: 7_200 }));
    const run = await baton.start('desk', 'check again in 2 hours');
    const started = baton.clock.now();

    // Act
    await baton.advance('1h59m');
    const before = await run.status();
    await baton.advance('1m');

    // Assert
    expect(before.status).toBe('waiting');
    expect(before.wakeAt).toBe(new Date(started + 7_200_000).toISOString());
    expect(await run.output()).toMatch(/^wait: \{"wokeAt":/);
    expect(baton.clock.now()).toBe(started + 7_200_000);
  });

  it('denies a call by default when its approval times out, and the tool never runs', async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('refund', { id: '9', amount: 500 }));
    const refunds = baton.mockTool('desk', 'refund', () => 'refunded');
    const run = await baton.start('desk', 'refund order 9');
    const waiting = await run.status();

    // Act
    await baton.advance('59m');
    const stillWaiting = await run.status();
    await baton.advance('1m');

    // Assert
    expect(waiting.pendingApprovals).toMatchObject([{ tool: 'refund', input: { id: '9', amount: 500 } }]);
    expect(stillWaiting.status).toBe('waiting');
    expect(await run.output()).toMatch(/^refund: /);
    expect(refunds.calls).toEqual([]);
    const [result] = toolResults(await run.transcript()).values();
    expect(result?.ok).toBe(false);
  });

  it('runs an approved call once, and lets the retention remove the finished session', async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk], retentionDays: 30 });
    baton.mockModel('desk', oneCall('refund', { id: '9', amount: 500 }));
    const refunds = baton.mockTool('desk', 'refund', () => 'refunded');
    const run = await baton.start('desk', 'refund order 9');

    // Act
    await run.approve();
    const output = await run.output();
    await baton.advance('32d');

    // Assert
    expect(output).toBe('refund: "refunded"');
    expect(refunds.calls).toHaveLength(1);
    await expect(run.status()).rejects.toThrow(`session ${run.sessionId} not found`);
  });
});

describe('createTestBaton: crash and recover', () => {
  it("kills the leg at the write of a once-only tool's result; the recovery reconciles it and it never runs twice", async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('refund', { id: '3', amount: 20 }));
    const crashes: ReturnType<typeof baton.crash>[] = [];
    const refunds = baton.mockTool('desk', 'refund', {
      run: () => {
        // The refund happened downstream; the leg dies before the journal learns it.
        crashes.push(baton.crash());
        return 'refunded';
      },
      reconcile: async () => ({ verdict: 'done', output: 'refunded (reconciled)' }),
    });

    // Act
    const run = await baton.start('desk', 'refund order 3');

    // Assert
    expect(crashes[0]).toMatchObject({ fired: true, sessionId: run.sessionId, diedAt: 'store.append' });
    expect(refunds.calls).toHaveLength(1);
    expect(await run.output()).toBe('refund: "refunded (reconciled)"');
    expect((await run.status()).recoveries).toBe(1);
  });

  it('recovers a leg killed at a named crash point, moving the clock by the lease TTL', async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk], leaseTtl: '10s' });
    baton.mockModel('desk', oneCall('lookup', { id: '5' }));
    baton.mockTool('desk', 'lookup', () => 'found');
    const crash = baton.crash('after-marker');
    const before = baton.clock.now();

    // Act
    const run = await baton.start('desk', 'find 5');

    // Assert
    expect(crash).toMatchObject({ fired: true, diedAt: 'after-marker', sessionId: run.sessionId });
    expect(await run.output()).toBe('lookup: "found"');
    expect(baton.clock.now() - before).toBeGreaterThanOrEqual(10_000);
    expect((await run.status()).recoveries).toBe(1);
  });

  it("armed before a start, kills that session's first leg at its first port call, and leaves other sessions alone", async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('lookup', { id: '1' }));
    baton.mockTool('desk', 'lookup', () => 'found');
    const other = await baton.start('desk', 'find 1');
    const target = deriveSessionId('default', 'desk', 'ticket-2');
    const crash = baton.crash('next-port-call', { sessionId: target });

    // Act
    const run = await baton.start('desk', 'find 1 again');

    // Assert
    expect(run.sessionId).toBe(target);
    expect(crash).toMatchObject({ fired: true, sessionId: target, diedAt: expect.stringMatching(/^store\./) });
    expect(await run.output()).toBe('lookup: "found"');
    expect((await other.status()).recoveries).toBe(0);
  });

  it('runs a pure call again when its leg died before the result was journaled: that step had not completed', async () => {
    // Arrange
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', oneCall('lookup', { id: '8' }));
    const lookups = baton.mockTool('desk', 'lookup', () => {
      if (lookups.calls.length === 1) baton.crash();
      return 'found';
    });

    // Act
    const run = await baton.start('desk', 'find 8');

    // Assert
    expect(lookups.calls).toHaveLength(2);
    expect(lookups.calls[0]?.idempotencyKey).toBe(lookups.calls[1]?.idempotencyKey);
    expect(await run.output()).toBe('lookup: "found"');
  });
});

describe('createTestBaton: every named crash point', () => {
  /** A once-only refund after a lookup: a turn that passes every crash point a short session can reach. */
  async function refundWithCrashAt(point: (typeof FAILPOINTS)[number]) {
    const baton = createTestBaton({ agents: [desk] });
    baton.mockModel('desk', (transcript) => {
      const results = toolResults(transcript);
      if (!results.has('c1')) return { toolCalls: [{ id: 'c1', name: 'lookup', input: { id: '4' } }] };
      if (!results.has('c2')) return { toolCalls: [{ id: 'c2', name: 'refund', input: { id: '4', amount: 10 } }] };
      return 'refunded';
    });
    baton.mockTool('desk', 'lookup', () => 'found');
    const refunds = baton.mockTool('desk', 'refund', {
      run: () => 'refunded',
      // A crash before the refund ran leaves a watermark: the downstream says the key is void.
      reconcile: async () => ({ verdict: 'notDone' }),
    });
    const crash = baton.crash(point);
    const run = await baton.start('desk', 'refund 4');
    return { crash, run, refunds };
  }

  // after-continuation needs a leg that runs out of budget: the next describe.
  it.each(FAILPOINTS.filter((p) => p !== 'after-continuation'))(
    'recovers a leg killed at %s: the turn completes once and the refund runs once',
    async (point) => {
      const { crash, run, refunds } = await refundWithCrashAt(point);

      expect(crash.fired).toBe(true);
      expect(await run.output()).toBe('refunded');
      expect(refunds.calls).toHaveLength(1);
      expect((await run.status()).outcome?.status).toBe('completed');
    },
  );
});

describe('createTestBaton: a leg that runs out of budget', () => {
  it('hands off to a continuation, and recovers a leg killed right after sending it', async () => {
    // Arrange: a lookup that takes 56 s of a 1-minute invocation, so the leg must yield after it.
    const baton = createTestBaton({ agents: [desk], functionTimeout: '1m' });
    baton.mockModel('desk', oneCall('lookup', { id: '6' }));
    baton.mockTool('desk', 'lookup', () => {
      baton.clock.advance(56_000);
      return 'found';
    });
    const crash = baton.crash('after-continuation');

    // Act
    const run = await baton.start('desk', 'find 6');

    // Assert
    expect(crash.fired).toBe(true);
    expect(await run.output()).toBe('lookup: "found"');
    expect(
      (await run.journal()).filter((e) => e.kind === 'leg').map((e) => e.kind === 'leg' && e.data.reason),
    ).toContain('continuation');
  });
});
