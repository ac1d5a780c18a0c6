import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentRegistry, defineAgent } from '../../../lib/agent/define-agent.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { InvalidInputError } from '../../../lib/core/errors.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { MAX_MESSAGE_BYTES } from '../../../lib/runtime/admission.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { memoryApi } from '../../fixtures/memory-api.ts';
import { makeTestDeps } from '../../fixtures/runtime.ts';

/** A conversation agent with an input schema and a small payload cap. */
const chat = defineAgent({
  name: 'chat',
  instructions: 'Answer.',
  conversation: true,
  input: z.object({ text: z.string().min(1) }),
  limits: { maxPayloadBytes: 4_096 },
  model: scriptedModel({ script: () => ({ final: 'ok' }) }),
  tools: [],
});
const agents = agentRegistry([chat]);

/** Nested `depth` levels deep, as JSON text (JSON.parse takes it; a recursive walker overflows). */
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const LONE_SURROGATE = '{"text":"lost \\ud800 parcel"}';

/** Each input no way in may accept, with what the refusal says. */
const HOSTILE = [
  {
    name: 'nested 2,000 levels deep',
    json: `{"text":"x","deep":${nested(2_000)}}`,
    says: /nested deeper than 64 levels/,
  },
  { name: 'nested 100,000 levels deep', json: nested(100_000), says: /nested deeper than 64 levels/ },
  { name: 'a lone surrogate', json: LONE_SURROGATE, says: /invalid Unicode \(a lone surrogate\)/ },
  { name: 'not the agent’s input schema', json: '{"words":"hi"}', says: /does not match agent chat: text: / },
  {
    name: 'over maxPayloadBytes',
    json: JSON.stringify({ text: 'x'.repeat(5_000) }),
    says: /over the hard cap of 4096 bytes/,
  },
] as const;

/** An idle-ish conversation of `chat` with its first turn running. */
async function conversation(store: MemorySessionStoreLike, now: number): Promise<SessionKey> {
  const key: SessionKey = { tenant: 'default', agent: 'chat', id: deriveSessionId('default', 'chat', 'first') };
  await store.createSession({
    key,
    ticketId: 'first',
    activeTurnId: 'first',
    traceId: 'a'.repeat(32),
    now,
    sweepAt: now,
    conversation: true,
  });
  return key;
}
type MemorySessionStoreLike = ReturnType<typeof memoryApi>['store'];

describe('one admission for every way in', () => {
  describe.each(HOSTILE)('an input $name', (hostile) => {
    it('is refused by intake (a queue ticket, first or further turn)', async () => {
      // Arrange
      const { deps, workQueue } = makeTestDeps([chat]);
      const body = (extra: string) => `{"ticketId":"T-1","agent":"chat"${extra},"input":${hostile.json}}`;

      // Act
      const first = acceptTicket(body(''), undefined, deps);
      const further = acceptTicket(body(',"sessionId":"S1"'), undefined, deps);

      // Assert
      await expect(first).rejects.toThrow(hostile.says);
      await expect(further).rejects.toThrow(hostile.says);
      expect(workQueue.pendingCount).toBe(0);
    });

    it('is refused by the API’s submit with 400, and no ticket is sent', async () => {
      // Arrange
      const { call, tickets } = memoryApi({ agents });

      // Act
      const answer = await call('POST', '/sessions', { rawBody: `{"agent":"chat","input":${hostile.json}}` });

      // Assert
      expect(answer.status).toBe(400);
      expect(answer.json.error?.message).toMatch(hostile.says);
      expect(tickets.pendingCount).toBe(0);
    });

    it.each(['queue', 'steer', 'inject'])(
      'is refused by the API’s send (%s) with 400, and nothing is stored',
      async (mode) => {
        // Arrange: inject with a turn running is a message (no schema); a message over the cap is refused alike.
        const { call, store, workQueue, clock } = memoryApi({ agents });
        const key = await conversation(store, clock.now());
        const isSchema = hostile.name === 'not the agent’s input schema';

        // Act
        const answer = await call('POST', `/sessions/${key.id}/send`, {
          rawBody: `{"mode":"${mode}","id":"turn-2","input":${hostile.json}}`,
        });

        // Assert
        if (mode === 'inject' && isSchema) {
          expect(answer.status).toBe(202); // a message is text for the running turn, not a turn input
          return;
        }
        expect(answer.status).toBe(400);
        expect(answer.json.error).toEqual({ code: 'invalid_request', message: expect.stringMatching(hostile.says) });
        expect(await store.getTurn(key, 'turn-2')).toBeUndefined();
        expect((await store.getSession(key))?.inbox).toEqual([]);
        expect(workQueue.pendingCount).toBe(0);
      },
    );

    it('is refused by the client’s send (the CLI on the tables), naming the input', async () => {
      // Arrange
      const { store, tickets, workQueue, clock } = memoryApi();
      const client = new BatonClient({ store, tickets, workQueue, clock, agents });
      const key = await conversation(store, clock.now());

      // Act
      const sent = client.send(key.id, JSON.parse(hostile.json), { id: 'turn-2' });

      // Assert
      await expect(sent).rejects.toThrow(InvalidInputError);
      await expect(sent).rejects.toThrow(hostile.says);
      expect(await store.getTurn(key, 'turn-2')).toBeUndefined();
    });
  });

  it('accepts a good input every way in', async () => {
    // Arrange
    const { call, store, clock } = memoryApi({ agents });
    const key = await conversation(store, clock.now());

    // Act
    const submitted = await call('POST', '/sessions', { body: { agent: 'chat', input: { text: 'hi' } } });
    const sent = await call('POST', `/sessions/${key.id}/send`, { body: { input: { text: 'more' }, id: 'turn-2' } });

    // Assert
    expect([submitted.status, sent.status]).toEqual([202, 202]);
  });

  it('takes a message into a running turn up to its own cap, smaller than a turn’s: it waits on the session record', async () => {
    // Arrange
    const { call, store, clock } = memoryApi({
      agents: agentRegistry([{ ...chat, limits: { ...chat.limits, maxPayloadBytes: 1_000_000 } }]),
    });
    const key = await conversation(store, clock.now());
    const long = { text: 'x'.repeat(MAX_MESSAGE_BYTES) };

    // Act
    const asMessage = await call('POST', `/sessions/${key.id}/send`, { body: { input: long, mode: 'inject' } });
    const asTurn = await call('POST', `/sessions/${key.id}/send`, { body: { input: long, mode: 'queue' } });

    // Assert
    expect([asMessage.status, asMessage.json.error?.message]).toEqual([
      400,
      expect.stringContaining('over the hard cap of 16384 bytes'),
    ]);
    expect(asTurn.status).toBe(202);
  });

  it('refuses an agent the API does not host', async () => {
    const { call } = memoryApi({ agents });

    const answer = await call('POST', '/sessions', { body: { agent: 'nobody', input: {} } });

    expect([answer.status, answer.json.error?.message]).toEqual([
      400,
      expect.stringContaining('unknown agent "nobody"'),
    ]);
  });
});

describe('spend limits through the API', () => {
  it('carries the limits of a submit onto its ticket, and refuses a malformed one naming it', async () => {
    // Arrange
    const { call, tickets } = memoryApi({ agents });

    // Act
    const accepted = await call('POST', '/sessions', {
      body: { agent: 'chat', input: { text: 'hi' }, limits: { maxModelCallsPerTurn: 3 } },
    });
    const refused = await call('POST', '/sessions', {
      body: { agent: 'chat', input: { text: 'hi' }, limits: { maxModelCallsPerTurn: 0 } },
    });

    // Assert
    expect(accepted.status).toBe(202);
    expect(tickets.bodies.map((t) => t.limits)).toEqual([{ maxModelCallsPerTurn: 3 }]);
    expect(refused.status).toBe(400);
    expect(refused.json.error?.message).toMatch(/limits\.maxModelCallsPerTurn/);
  });

  it("stores a sent turn's limits on its turn item, where its leg reads them", async () => {
    // Arrange
    const { call, store, clock } = memoryApi({ agents });
    const key = await conversation(store, clock.now());

    // Act
    const sent = await call('POST', `/sessions/${key.id}/send`, {
      body: { input: { text: 'and then?' }, id: 't2', limits: { maxTokensPerTurn: 500 } },
    });

    // Assert
    expect(sent.status).toBe(202);
    expect((await store.getTurn(key, 't2'))?.limits).toEqual({ maxTokensPerTurn: 500 });
  });
});
