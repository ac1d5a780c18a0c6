import { describe, expect, expectTypeOf, it } from 'vitest';
import { type AgentOutput, agentRef, createClient, type Run, type RunOutcome } from '../../../lib/client/index.ts';
import { InvalidInputError, NotFoundError } from '../../../lib/core/errors.ts';
import { answerer, chatter, memoryStack } from '../../fixtures/memory-stack.ts';

describe('the typed client', () => {
  it('starts a turn of an agent and answers its outcome with the output its schema parsed', async () => {
    // Arrange
    const { eager } = memoryStack();
    const baton = createClient({ transport: eager });

    // Act
    const run = await baton.start(answerer, { question: 'why?' }, { ticketId: 'Q1' });
    const outcome = await run.result();

    // Assert
    expect(run).toMatchObject({ turnId: 'Q1', agent: 'answerer' });
    expect(outcome).toEqual({
      status: 'completed',
      sessionId: run.sessionId,
      turnId: 'Q1',
      output: { answer: 'you asked: why?', length: 4 },
    });
  });

  it('waits for a turn that intake has not taken yet, then for its outcome', async () => {
    // Arrange
    const { client, pump, clock } = memoryStack();
    const baton = createClient({ transport: client });
    const run = await baton.start(answerer, { question: 'later' });

    // Act: the wait starts before the ticket is a session.
    const waiting = run.result({ clock });
    await pump();
    const outcome = await waiting;

    // Assert
    expect(outcome).toMatchObject({ status: 'completed', output: { answer: 'you asked: later' } });
  });

  it('answers a failed turn with its reason, and sends further turns of a conversation through the run', async () => {
    // Arrange
    const { eager } = memoryStack();
    const baton = createClient({ transport: eager });

    // Act
    const broken = await (await baton.start(answerer, { question: 'break' })).result();
    const first = await baton.start(chatter, { text: 'hello' });
    const second = await baton.send(first, { text: 'again' });
    const answers = [await first.result(), await second.result()];

    // Assert
    expect(broken).toMatchObject({ status: 'failed', error: expect.stringMatching(/JSON|output/i) });
    expect(answers.map((a) => (a.status === 'completed' ? a.output : a.status))).toEqual([
      'echo 1: hello',
      'echo 2: again',
    ]);
    expect(second.sessionId).toBe(first.sessionId);
  });

  it('refuses an unknown agent and an input its schema refuses at once, queuing nothing', async () => {
    // Arrange
    const { client, tickets } = memoryStack();
    const baton = createClient({ transport: client });

    // Act
    const unknown = await baton.start('no-such-agent', { question: 'x' }).catch((e: unknown) => e);
    const mismatched = await baton.start('answerer', { text: 'not a question' }).catch((e: unknown) => e);

    // Assert
    expect(unknown).toBeInstanceOf(InvalidInputError);
    expect((unknown as Error).message).toContain('unknown agent "no-such-agent" (deployed: answerer, chatter)');
    expect(mismatched).toBeInstanceOf(InvalidInputError);
    expect((mismatched as Error).message).toContain('does not match agent answerer');
    expect(tickets.pendingCount).toBe(0);
  });

  it('gives up on a turn that never appears, saying what may have happened', async () => {
    // Arrange: a ticket nobody takes.
    const { client, clock } = memoryStack();
    const run = await createClient({ transport: client }).start(answerer, { question: 'lost' });

    // Act
    const error = await run.result({ clock, appearWithinMs: 1_000 }).catch((e: unknown) => e);

    // Assert
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toContain(`turn ${run.turnId} of session ${run.sessionId} did not appear`);
  });
});

describe('the typed client’s types', () => {
  // These assertions are checked by tsc (the repository typecheck); at run time they only run.
  it('takes only the agent’s input and answers its output type', async () => {
    const baton = createClient({ transport: memoryStack().eager });

    expectTypeOf(baton.start(answerer, { question: 'q' })).resolves.toEqualTypeOf<
      Run<{ answer: string; length: number }, { question: string }>
    >();
    // @ts-expect-error: the input lacks the schema's `question`
    await baton.start(answerer, { text: 'q' }).catch(() => undefined);
    // @ts-expect-error: `question` must be a string
    await baton.start(answerer, { question: 42 }).catch(() => undefined);

    const run = await baton.start(chatter, { text: 'hi' });
    const outcome = await run.result();
    if (outcome.status === 'completed') expectTypeOf(outcome.output).toEqualTypeOf<string>();
    // @ts-expect-error: a further turn of the conversation takes the same agent's input
    await baton.send(run, { question: 'wrong agent' }).catch(() => undefined);

    // By name the input is anything and the output unknown.
    const named = await baton.start('chatter', { text: 'hi' });
    expectTypeOf(named).toEqualTypeOf<Run<unknown, unknown>>();
    expectTypeOf<RunOutcome<unknown>>().toMatchTypeOf<Awaited<ReturnType<typeof named.result>>>();

    // A type-only reference types the call without loading the agent.
    const ref = agentRef<typeof answerer>('answerer');
    expectTypeOf<AgentOutput<typeof ref>>().toEqualTypeOf<{ answer: string; length: number }>();
    // @ts-expect-error: the reference carries the input type too
    await baton.start(ref, { text: 'q' }).catch(() => undefined);
  });
});
