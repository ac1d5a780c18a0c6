import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { MemoryStreamSlots } from '../../../lib/adapters/memory/memory-stream-slots.ts';
import { createApiHandler } from '../../../lib/api/api-handler.ts';
import { HttpBatonClient } from '../../../lib/client/http-baton-client.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { TURN_STOPPED } from '../../../lib/core/inbox.ts';
import { ALL_ROLES } from '../../../lib/core/roles.ts';
import { chatter, memoryStack } from '../../fixtures/memory-stack.ts';

/** The HTTP client over the API handler on the in-memory runtime: its fetch calls the handler as a function URL would. */
function httpOverMemory() {
  const stack = memoryStack([chatter]);
  const api = createApiHandler({
    services: {
      client: stack.client,
      store: stack.store,
      clock: stack.clock,
      eventsWaitMs: 0,
      eventsPollMs: 10,
      streams: new MemoryStreamSlots(),
      streamsPerCaller: 4,
    },
    resolveCaller: () => ({ principal: 'test', tenants: 'all', roles: ALL_ROLES }),
  });
  const fetchApi = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const answer = await api({
      requestContext: { http: { method: init?.method ?? 'GET' } },
      rawPath: url.pathname,
      rawQueryString: url.search.slice(1),
      headers: { 'content-type': 'application/json' },
      ...(typeof init?.body === 'string' ? { body: init.body } : {}),
    } as unknown as LambdaFunctionURLEvent);
    if (typeof answer === 'string') return new Response(answer);
    return new Response(answer.statusCode === 204 ? null : (answer.body ?? ''), { status: answer.statusCode ?? 200 });
  }) as typeof fetch;
  const http = new HttpBatonClient({ baseUrl: 'http://127.0.0.1:1', fetch: fetchApi });
  return { stack, http };
}

describe('POST /sessions/{id}/turns/{turnId}/stop through the HTTP client', () => {
  it('stops a queued turn, answers already-ended for an ended one and not-found for none, and the conversation goes on', async () => {
    // Arrange: a conversation idle after its first turn, then one turn active and one queued.
    const { stack, http } = httpOverMemory();
    await stack.eager.submit({ agent: 'chatter', ticketId: 'c-1', input: { text: 'hello' } });
    const sessionId = deriveSessionId('default', 'chatter', 'c-1');
    await stack.client.send(sessionId, { text: 'two' }, { id: 'two' });
    await stack.client.send(sessionId, { text: 'three' }, { id: 'three' });

    // Act
    const answers = [
      await http.stopTurn(sessionId, 'three'),
      await http.stopTurn(sessionId, 'c-1'),
      await http.stopTurn(sessionId, 'no-such-turn'),
      await http.stopTurn('no-such-session', 'three'),
    ];
    await stack.pump();
    const next = await stack.eager.send(sessionId, { text: 'four' }, { id: 'four' });

    // Assert
    expect(answers).toEqual(['requested', 'already-ended', 'not-found', 'not-found']);
    // The stopped turn never ran; its input stays in the conversation, as it stays on the page.
    expect(stack.results.bodies.map((r) => [r.turnId, r.status, r.error])).toEqual([
      ['c-1', 'completed', undefined],
      ['two', 'completed', undefined],
      ['three', 'cancelled', TURN_STOPPED],
      [next.turnId, 'completed', undefined],
    ]);
    expect((await stack.store.getSession({ tenant: 'default', agent: 'chatter', id: sessionId }))?.state).toBe('idle');
  });
});
