import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLedger } from '../../examples/simulated/ledger.ts';
import { deriveSessionId } from '../../lib/core/ids.ts';
import { legMarkerOf } from '../../lib/core/journal.ts';
import type { Result } from '../../lib/core/messages.ts';
import { TEST_AGENTS_MODULE } from '../fixtures/agents/registry.ts';
import { batonOk } from '../fixtures/cli.ts';
import { startTestStack, type TestStack } from '../fixtures/stack.ts';

const AGENT = 'support-desk';

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Worker processes start cold on a busy 2-core machine: allow minutes, not seconds.
describe('conversations on the local stack with two workers', { timeout: 180_000 }, () => {
  let t: TestStack;

  beforeAll(async () => {
    t = await startTestStack({ handlerEnv: { BATON_AGENTS_MODULE: TEST_AGENTS_MODULE } });
  });
  afterAll(async () => {
    await t?.stop();
  });

  const resultOf = async (ticketId: string): Promise<Result> =>
    (await t.awaitResults((rs) => rs.some((r) => r.ticketId === ticketId), 60_000)).find(
      (r) => r.ticketId === ticketId,
    )!;

  const start = async (ticketId: string, text: string) => {
    await t.client.submit({ agent: AGENT, ticketId, input: { text } });
    await resultOf(ticketId);
    return deriveSessionId('default', AGENT, ticketId);
  };

  it('takes turn after turn, stops at an approval with no lease held, and resumes when another process approves', async () => {
    // Arrange
    const sessionId = await start('conv-1', 'hello');
    // The result is published just before the owner's release: wait for the release.
    const idle = await waitFor('the session to go idle', async () => {
      const record = await t.store.getSession({ tenant: 'default', agent: AGENT, id: sessionId });
      return record?.state === 'idle' ? record : undefined;
    });

    // Act
    await t.client.send(sessionId, { text: 'refund O-7' }, { id: 'conv-1-refund' });
    const waiting = await waitFor('the approval request', async () => {
      const status = await t.client.status(sessionId);
      return status?.pendingApprovals?.length ? status : undefined;
    });
    const record = await t.store.getSession({ tenant: 'default', agent: AGENT, id: sessionId });
    await t.client.approve(sessionId, 't2-refund', { approved: true });
    const refunded = await resultOf('conv-1-refund');
    await t.client.send(sessionId, { text: 'thanks' }, { id: 'conv-1-thanks' });
    const thanked = await resultOf('conv-1-thanks');

    // Assert
    expect(idle.owner).toBeUndefined();
    expect(idle.sweepAt).toBeUndefined();
    expect(waiting.pendingApprovals).toEqual([
      {
        modelSeq: expect.any(Number),
        callId: 't2-refund',
        tool: 'issueRefund',
        digest: expect.stringMatching(/^[0-9a-f]{64}$/),
        input: expect.objectContaining({ orderId: 'O-7' }),
      },
    ]);
    expect(record?.owner).toBeUndefined();
    expect(refunded).toMatchObject({
      status: 'completed',
      output: expect.stringMatching(/^refund R-\w+ issued for O-7$/),
    });
    expect(thanked.output).toBe('turn 3: thanks');
    const status = await t.client.status(sessionId);
    expect(status?.turns?.map((turn) => [turn.turnId, turn.outcome])).toEqual([
      ['conv-1', 'completed'],
      ['conv-1-refund', 'completed'],
      ['conv-1-thanks', 'completed'],
    ]);
  });

  it('runs turns sent by five processes at once strictly one after another, and a resent turn once', async () => {
    // Arrange
    const sessionId = await start('conv-2', 'hello');
    const ids = [1, 2, 3, 4, 5].map((i) => `conv-2-t${i}`);

    // Act: five `baton send` processes at once.
    const printed = await Promise.all(
      ids.map((id) => batonOk(['send', sessionId, '--text', `from ${id}`, '--id', id], t.stateDir)),
    );
    await t.client.send(sessionId, { text: `from ${ids[0]}` }, { id: ids[0] });
    const results = await Promise.all(ids.map(resultOf));

    // Assert
    expect(printed.map((out) => out.trim())).toEqual(ids);
    const numbers = results.map((r) => Number(/^turn (\d+):/.exec(String(r.output))?.[1]));
    expect([...numbers].sort()).toEqual([2, 3, 4, 5, 6]);
    // The owner ends the turn just after it sends the result: wait for the last turn's end.
    const key = { tenant: 'default', agent: AGENT, id: sessionId };
    await waitFor('the last turn to end', async () => {
      const record = await t.store.getSession(key);
      return record?.state === 'idle' && record.turnQueue.length === 0 ? record : undefined;
    });
    const journal = await t.store.readJournal(key);
    const inputs = journal.filter((e) => e.kind === 'input').map((e) => e.turnId);
    expect(inputs).toHaveLength(6);
    // Sequential: each turn's entries end (outcome) before the next turn's input.
    const order = journal.filter((e) => e.kind === 'input' || e.kind === 'outcome').map((e) => e.kind);
    expect(order).toEqual(Array.from({ length: 6 }, () => ['input', 'outcome']).flat());
  });

  it('journals a message injected from another process before the running turn’s next model call', async () => {
    // Arrange
    const sessionId = await start('conv-3', 'hello');
    // The turn works until it is told something, however long the other process takes to start.
    await t.client.send(sessionId, { text: 'work until told' }, { id: 'conv-3-work' });
    await waitFor('the work turn to run', async () => {
      const journal = await t.store.readJournal({ tenant: 'default', agent: AGENT, id: sessionId });
      return journal.some((e) => e.kind === 'tool' && e.turnId === 'conv-3-work') ? true : undefined;
    });

    // Act
    // Another process than the test's (and than either worker) tells the running turn something.
    const sent = JSON.parse(
      await batonOk(
        ['send', sessionId, '--text', 'customer is VIP', '--id', 'note-1', '--mode', 'inject', '--json'],
        t.stateDir,
      ),
    );
    const done = await resultOf('conv-3-work');

    // Assert
    expect(sent).toMatchObject({ sessionId, turnId: 'note-1', mode: 'inject' });
    expect(done.output).toMatch(/^done \d+; notes: customer is VIP$/);
    const journal = await t.store.readJournal({ tenant: 'default', agent: AGENT, id: sessionId });
    const message = journal.find((e) => e.kind === 'message');
    const lastModel = journal.filter((e) => e.kind === 'model').at(-1);
    expect(message?.turnId).toBe('conv-3-work');
    expect(message!.seq).toBeLessThan(lastModel!.seq);
  });

  it('parks a turn on a durable timer holding no lease, and the timer wakes it', async () => {
    // Arrange
    const sessionId = await start('conv-4', 'hello');

    // Act
    await t.client.send(sessionId, { text: 'remind me in 2 s' }, { id: 'conv-4-remind' });
    const parked = await waitFor('the turn to park on its timer', async () => {
      const status = await t.client.status(sessionId);
      return status?.wakeAt ? status : undefined;
    });
    const record = await t.store.getSession({ tenant: 'default', agent: AGENT, id: sessionId });
    const reminded = await resultOf('conv-4-remind');

    // Assert
    expect(parked.status).toBe('waiting');
    expect(record?.owner).toBeUndefined();
    expect(reminded).toMatchObject({ status: 'completed', output: 'reminder' });
    const journal = await t.store.readJournal({ tenant: 'default', agent: AGENT, id: sessionId });
    const timer = journal.find((e) => e.kind === 'timer');
    const woke = journal.find((e) => e.kind === 'tool' && e.turnId === 'conv-4-remind');
    expect(Date.parse(parked.wakeAt!)).toBe(timer?.kind === 'timer' ? timer.data.wakeAt : Number.NaN);
    expect(woke!.at).toBeGreaterThanOrEqual(Date.parse(parked.wakeAt!));
  });

  it('steers: the running turn winds down as superseded, its partial work kept, and the steering turn runs at once', async () => {
    // Arrange
    const sessionId = await start('conv-5', 'hello');
    await t.client.send(sessionId, { text: 'work 20' }, { id: 'conv-5-work' });
    await waitFor('the work turn to run', async () => {
      const journal = await t.store.readJournal({ tenant: 'default', agent: AGENT, id: sessionId });
      return journal.some((e) => e.kind === 'tool' && e.turnId === 'conv-5-work') ? true : undefined;
    });

    // Act
    const sent = await t.client.send(sessionId, { text: 'stop, do this' }, { id: 'conv-5-steer', mode: 'steer' });
    const superseded = await resultOf('conv-5-work');
    const steered = await resultOf('conv-5-steer');

    // Assert
    expect(sent.mode).toBe('steer');
    expect(superseded).toMatchObject({ status: 'superseded', error: 'superseded by turn conv-5-steer' });
    expect(steered).toMatchObject({ status: 'completed', output: 'turn 3: stop, do this' });
    const journal = await t.store.readJournal({ tenant: 'default', agent: AGENT, id: sessionId });
    const workResults = journal.filter((e) => e.kind === 'tool' && e.turnId === 'conv-5-work');
    expect(workResults.length).toBeGreaterThan(0);
    expect(workResults.length).toBeLessThan(20);
  });

  it('stops one turn from the CLI: it ends cancelled, the turn queued behind it runs, and the conversation takes the next', async () => {
    // Arrange
    const sessionId = await start('conv-6', 'hello');
    await t.client.send(sessionId, { text: 'work 20' }, { id: 'conv-6-work' });
    await t.client.send(sessionId, { text: 'queued' }, { id: 'conv-6-queued' });
    await waitFor('the work turn to run', async () => {
      const journal = await t.store.readJournal({ tenant: 'default', agent: AGENT, id: sessionId });
      return journal.some((e) => e.kind === 'tool' && e.turnId === 'conv-6-work') ? true : undefined;
    });

    // Act
    const stopped = await batonOk(['cancel', sessionId, '--turn', 'conv-6-work', '--json'], t.stateDir);
    const work = await resultOf('conv-6-work');
    const queued = await resultOf('conv-6-queued');
    const again = await batonOk(['cancel', sessionId, '--turn', 'conv-6-work', '--json'], t.stateDir);
    await t.client.send(sessionId, { text: 'and then' }, { id: 'conv-6-next' });
    const next = await resultOf('conv-6-next');

    // Assert
    expect(JSON.parse(stopped)).toEqual({ sessionId, turnId: 'conv-6-work', result: 'requested' });
    expect(work).toMatchObject({ status: 'cancelled', error: 'turn stopped by request' });
    expect(queued).toMatchObject({ status: 'completed', output: 'turn 3: queued' });
    expect(JSON.parse(again).result).toBe('already-ended');
    expect(next).toMatchObject({ status: 'completed', output: 'turn 4: and then' });
    const status = await t.client.status(sessionId);
    expect(status?.cancelRequested).toBe(false);
    expect(status?.status).not.toBe('cancelled');
  });

  it('resumes a turn whose approval another process answers after every worker was killed, and runs the once-only refund once', async () => {
    // Arrange
    const sessionId = await start('conv-8', 'hello');
    await t.client.send(sessionId, { text: 'refund O-42' }, { id: 'conv-8-refund' });
    await waitFor('the approval request', async () => {
      const status = await t.client.status(sessionId);
      return status?.pendingApprovals?.length ? status : undefined;
    });
    for (const { pid } of t.stack.supervisor.workers()) process.kill(pid, 'SIGKILL');

    // Act
    await batonOk(['approve', sessionId, 't2-refund'], t.stateDir);
    const refunded = await resultOf('conv-8-refund');

    // Assert
    expect(refunded).toMatchObject({
      status: 'completed',
      output: expect.stringMatching(/^refund R-\w+ issued for O-42$/),
    });
    const refunds = readLedger(join(t.stateDir, 'ledger.jsonl')).filter(
      (line) => line.operation === 'issueRefund' && line.sessionId === sessionId,
    );
    expect(refunds).toHaveLength(1);
  });

  // Last: it kills the workers (the supervisor starts new ones).
  it('recovers a turn whose workers were killed with the same identities and no retry spent, and a client reconnecting with its last cursor converges on its transcript', async () => {
    // Arrange
    const sessionId = await start('conv-9', 'hello');
    await t.client.send(sessionId, { text: 'work 8' }, { id: 'conv-9-work' });
    const seen: number[] = [];
    for await (const event of t.client.events(sessionId, { turnId: 'conv-9-work', follow: true, pollMs: 100 })) {
      seen.push(event.cursor);
      if (event.kind === 'tool') break; // the client disconnects mid-turn
    }

    // Act
    for (const { pid } of t.stack.supervisor.workers()) process.kill(pid, 'SIGKILL');
    for await (const event of t.client.events(sessionId, {
      turnId: 'conv-9-work',
      after: seen.at(-1) ?? 0,
      follow: true,
      pollMs: 100,
    }))
      seen.push(event.cursor);

    // Assert
    const result = await resultOf('conv-9-work');
    expect(result).toMatchObject({ status: 'completed', output: 'done 8' });
    const journal = await t.store.readJournal({ tenant: 'default', agent: AGENT, id: sessionId });
    expect(seen).toEqual(journal.filter((e) => e.turnId === 'conv-9-work').map((e) => e.seq));
    // Recovery re-entered the turn with the same identities and input, and spent no retry budget.
    const turn = journal.filter((e) => e.turnId === 'conv-9-work');
    expect(turn.some((e) => legMarkerOf(e)?.reason === 'recovery')).toBe(true);
    expect(turn.flatMap((e) => (e.kind === 'input' ? [e.data.input] : []))).toEqual([{ text: 'work 8' }]);
    const callIds = turn.flatMap((e) => (e.kind === 'tool' ? [e.data.callId] : []));
    expect(callIds).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `t2-w${i}`));
    expect(turn.filter((e) => e.kind === 'error')).toEqual([]);
    expect(result.steps).toBe(journal.filter((e) => ['model', 'tool', 'reconciled'].includes(e.kind)).length);
  });
});
