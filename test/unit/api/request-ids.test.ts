import { describe, expect, it } from 'vitest';
import type { BatonClient } from '../../../lib/client/baton-client.ts';
import { InvalidInputError } from '../../../lib/core/errors.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { ALL_ROLES } from '../../../lib/core/roles.ts';
import { memoryApi } from '../../fixtures/memory-api.ts';
import { chatter, memoryStack } from '../../fixtures/memory-stack.ts';

/** The API over the in-memory runtime: a submit or send runs to its end before it answers. */
function api() {
  const stack = memoryStack([chatter]);
  const { call: request } = memoryApi({
    over: { client: stack.eager as BatonClient, store: stack.store, clock: stack.clock },
    resolveCaller: () => ({ principal: 'test', tenants: ['acme'], roles: ALL_ROLES }),
  });
  const call = async (method: string, path: string, body: unknown) => {
    const { status, json } = await request(method, path, { body });
    return { status, error: json.error };
  };
  return { stack, call };
}

const user = (id: string, text: string) => ({ id, role: 'user', parts: [{ type: 'text', text }] });

describe('ids a caller gives that name stored things', () => {
  it('refuses a fork or rerun id that is not a clean ticket id: two ids with lone surrogates would name one fork', async () => {
    // Arrange: a conversation of one turn, and two fork ids that differ only in a lone surrogate.
    const { stack, call } = api();
    await stack.eager.submit({ agent: 'chatter', ticketId: 'c-1', input: { text: 'hi' }, tenant: 'acme' });
    const sessionId = deriveSessionId('acme', 'chatter', 'c-1');

    // Act
    const first = await call('POST', `/sessions/${sessionId}/fork`, { at: 0, text: 'one', id: 'f\ud800' });
    const second = await call('POST', `/sessions/${sessionId}/fork`, { at: 0, text: 'two', id: 'f\ud801' });
    const newline = await call('POST', `/sessions/${sessionId}/rerun`, { turn: 'c-1', id: 'f\nforged log line' });
    const direct = stack.client.fork(sessionId, { at: 0, input: { text: 'three' }, id: 'f\ud802' });

    // Assert: each is refused, naming the rule, and no fork was made.
    for (const answer of [first, second, newline]) {
      expect(answer.status).toBe(400);
      expect(answer.error).toEqual({
        code: 'invalid_request',
        message: expect.stringContaining('well-formed Unicode without control characters'),
      });
    }
    await expect(direct).rejects.toThrow(InvalidInputError);
    await expect(direct).rejects.toThrow(/fork id: ticket id must be well-formed Unicode/);
    expect((await stack.client.sessions({ tenant: 'acme' })).sessions.map((s) => s.sessionId)).toEqual([sessionId]);
  });

  it('refuses a later chat message whose id, the turn’s, is not a clean ticket id, as a send refuses it', async () => {
    // Arrange: a chat with its first answer.
    const { call } = api();
    expect((await call('POST', '/agents/chatter/chat', { id: 'k', messages: [user('m1', 'hi')] })).status).toBe(200);

    // Act
    const later = await call('POST', '/agents/chatter/chat', {
      id: 'k',
      messages: [user('m1', 'hi'), user('m\n2', 'more')],
    });

    // Assert
    expect(later.status).toBe(400);
    expect(later.error).toEqual({
      code: 'invalid_request',
      message: expect.stringMatching(/^message "m\\n2" cannot be a turn id: .*without control characters/),
    });
  });
});
