import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { MemoryTicketQueue, MemoryWorkQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { MemorySessionStore } from '../../../lib/adapters/memory/memory-session-store.ts';
import { apiRoutes } from '../../../lib/api/api-handler.ts';
import type { Caller } from '../../../lib/api/caller.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { RoleRequiredError } from '../../../lib/core/errors.ts';
import { ALL_ROLES, OPERATION_ROLES, type Role } from '../../../lib/core/roles.ts';
import { memoryApi } from '../../fixtures/memory-api.ts';

const caller = (roles: readonly Role[]): Caller => ({
  principal: 'arn:aws:iam::111122223333:role/Partial',
  tenants: 'all',
  roles,
});

/** Every operation of the API with a request that reaches its handler. */
const OPERATIONS = [
  { role: 'submit', method: 'POST', path: '/sessions', body: { agent: 'echo', input: {} } },
  { role: 'read', method: 'GET', path: '/sessions' },
  { role: 'read', method: 'GET', path: '/sessions/S1' },
  { role: 'read', method: 'GET', path: '/sessions/S1/events' },
  { role: 'read', method: 'GET', path: '/sessions/S1/tasks' },
  { role: 'converse', method: 'POST', path: '/sessions/S1/send', body: { input: { text: 'hi' } } },
  { role: 'approve', method: 'POST', path: '/sessions/S1/approve', body: { callId: 'c1', approved: true } },
  { role: 'operate', method: 'POST', path: '/sessions/S1/resolve', body: { callId: 'c1', done: true, output: 1 } },
  { role: 'operate', method: 'POST', path: '/sessions/S1/cancel' },
  { role: 'operate', method: 'POST', path: '/sessions/S1/turns/T1/stop' },
  { role: 'operate', method: 'POST', path: '/sessions/S1/release', body: {} },
] as const;

describe('roles: what a caller may do with the sessions it sees', () => {
  it.each(OPERATIONS)('refuses $method $path without the $role role: 403 missing_role naming it', async (op) => {
    // Arrange: a caller that sees every tenant and has every role but this one.
    const { call } = memoryApi({ resolveCaller: () => caller(ALL_ROLES.filter((r) => r !== op.role)) });

    // Act
    const answer = await call(op.method, op.path, 'body' in op ? { body: op.body } : {});

    // Assert
    expect(answer.status).toBe(403);
    expect(answer.json.error).toEqual({
      code: 'missing_role',
      message: expect.stringContaining(`lacks the role '${op.role}'`),
    });
    expect(answer.json.error?.message).toContain('arn:aws:iam::111122223333:role/Partial');
  });

  it.each(OPERATIONS)('lets a caller with only the $role role past the check of $method $path', async (op) => {
    // Arrange
    const { call } = memoryApi({ resolveCaller: () => caller([op.role]) });

    // Act
    const answer = await call(op.method, op.path, 'body' in op ? { body: op.body } : {});

    // Assert: the operation ran (a missing session is not found; nothing is refused for a role).
    expect(answer.json.error?.code).not.toBe('missing_role');
    expect(answer.status).not.toBe(403);
  });

  it('forks only for a caller with both submit and read: either alone is refused, naming the missing role', async () => {
    // Arrange
    const submitter = memoryApi({ resolveCaller: () => caller(['submit']) });
    const reader = memoryApi({ resolveCaller: () => caller(['read']) });
    const both = memoryApi({ resolveCaller: () => caller(['submit', 'read']) });
    const body = { at: 0, text: 'again' };

    // Act
    const bySubmitter = await submitter.call('POST', '/sessions/S1/fork', { body });
    const byReader = await reader.call('POST', '/sessions/S1/rerun', { body: { turn: 'T1' } });
    const byBoth = await both.call('POST', '/sessions/S1/fork', { body });

    // Assert: a caller with both gets past the roles to the session, which does not exist.
    expect(bySubmitter.status).toBe(403);
    expect(bySubmitter.json.error?.message).toContain("lacks the role 'read'");
    expect(byReader.status).toBe(403);
    expect(byReader.json.error?.message).toContain("lacks the role 'submit'");
    expect([byBoth.status, byBoth.json.error?.code]).toEqual([404, 'not_found']);
  });

  it('an approver cannot invent a parked call’s output, steer, or cancel; a reader can do nothing but read', async () => {
    // Arrange
    const approver = memoryApi({ resolveCaller: () => caller(['read', 'approve']) });
    const reader = memoryApi({ resolveCaller: () => caller(['read']) });

    // Act
    const resolve = await approver.call('POST', '/sessions/S1/resolve', {
      body: { callId: 'c', done: true, output: 'made up' },
    });
    const steer = await approver.call('POST', '/sessions/S1/send', { body: { input: { text: 'x' }, mode: 'steer' } });
    const inject = await reader.call('POST', '/sessions/S1/send', { body: { input: { text: 'x' }, mode: 'inject' } });
    const approve = await reader.call('POST', '/sessions/S1/approve', { body: { callId: 'c', approved: true } });

    // Assert
    expect([resolve, steer, inject, approve].map((a) => [a.status, a.json.error?.code])).toEqual([
      [403, 'missing_role'],
      [403, 'missing_role'],
      [403, 'missing_role'],
      [403, 'missing_role'],
    ]);
    expect(approver.workQueue.pendingCount + reader.workQueue.pendingCount).toBe(0);
  });

  it('answers GET /me with the caller’s principal, tenants and roles, whatever its roles', async () => {
    // Arrange
    const { call } = memoryApi({ resolveCaller: () => ({ principal: 'p', tenants: ['acme'], roles: ['approve'] }) });

    // Act
    const me = await call('GET', '/me');

    // Assert
    expect(me).toEqual({ status: 200, json: { principal: 'p', tenants: ['acme'], roles: ['approve'] } });
  });

  it('every route names the role of its operation, from the one table', () => {
    const routes = apiRoutes().filter((route) => !route.public);
    const allowed = new Set<string>([...Object.values(OPERATION_ROLES), 'any']);

    expect(routes.every((route) => allowed.has(route.role))).toBe(true);
    expect(routes.filter((route) => route.role === 'any').map((route) => route.path)).toEqual(['/me']);
  });

  it('a client built for a user’s roles refuses what they do not allow before reading anything', async () => {
    // Arrange
    const clock = new ManualClock();
    const store = new MemorySessionStore({ clock });
    const client = new BatonClient({
      store,
      tickets: new MemoryTicketQueue({ clock }),
      workQueue: new MemoryWorkQueue({ clock }),
      clock,
      roles: ['read', 'approve'],
    });

    // Act
    const resolve = await client.resolve('S1', 'c1', { done: true, output: 1 }).catch((e: unknown) => e);
    const send = await client.send('S1', { text: 'x' }).catch((e: unknown) => e);
    const approve = await client.approve('S1', 'c1', { approved: true }).catch((e: unknown) => e);

    // Assert
    expect(resolve).toBeInstanceOf(RoleRequiredError);
    expect((resolve as RoleRequiredError).role).toBe('operate');
    expect((send as RoleRequiredError).role).toBe('converse');
    // Allowed: it got as far as looking for the session.
    expect(approve).not.toBeInstanceOf(RoleRequiredError);
  });
});
