import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  InvalidInputError,
  PayloadTooLargeError,
  TenantNotAllowedError,
  TicketConflictError,
} from '../../../lib/core/errors.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { parseProducers } from '../../../lib/core/tenancy.ts';
import { acceptTicket, recordRejectedTicket, salvageIds } from '../../../lib/runtime/intake.ts';
import { drain, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const key = (ticketId: string, agent = 'lookup-agent') => ({
  tenant: 'default',
  agent,
  id: deriveSessionId('default', agent, ticketId),
});

describe('intake', () => {
  it('persists the turn and the session, then kicks, once per ticket however often it arrives', async () => {
    const { deps, store, workQueue, clock } = makeTestDeps([lookupAgent()]);
    const first = await acceptTicket(ticketBody('lookup-agent', 'T-1', { ids: ['a'] }), undefined, deps);
    // The resubmission comes later (at the same instant it would be the store's own retried write).
    clock.advance(1_000);
    const again = await acceptTicket(ticketBody('lookup-agent', 'T-1', { ids: ['a'] }), undefined, deps);

    expect(first).toMatchObject({ created: true, turnId: 'T-1', key: key('T-1') });
    expect(again).toMatchObject({ created: false, key: first.key });
    expect((await store.getSession(first.key))?.state).toBe('queued');
    expect(await store.getTurn(first.key, 'T-1')).toMatchObject({ input: { ids: ['a'] } });
    // The resubmission kicks again: the first kick may be what was lost; a duplicate is dropped later.
    expect(workQueue.bodies.map((k) => k.reason)).toEqual(['first', 'first']);
  });

  describe('a redelivery first sent longer than a retention ago (seed 9707: a refund ran twice)', () => {
    const day = 86_400_000;

    it('is refused when its session is not on record: it may have run and expired', async () => {
      const { deps, store, workQueue, clock } = makeTestDeps([lookupAgent()]);
      const sentAt = clock.now();
      clock.advance(31 * day);
      const refusal = acceptTicket(ticketBody('lookup-agent', 'T-old', { ids: ['a'] }), undefined, deps, { sentAt });
      await expect(refusal).rejects.toThrow(InvalidInputError);
      await expect(refusal).rejects.toThrow(
        /ticket T-old was first sent 31 days ago, longer than the session retention \(1 day\), and its session is not on record/,
      );
      expect(await store.getTurn(key('T-old'), 'T-old')).toBeUndefined();
      expect(workQueue.sent).toHaveLength(0);
    });

    it('is refused when its turn is older than a retention and its record expired (seed 9048: a turn ran twice)', async () => {
      // Arrange: the session ran; a retention and a bit later its record expired, its items not yet.
      const { deps, store, clock, workQueue } = makeTestDeps([lookupAgent()]);
      await acceptTicket(ticketBody('lookup-agent', 'T-gone', { ids: ['a'] }), undefined, deps);
      await drain(deps);
      clock.advance(day + 60_000);
      store.expireItems(Math.floor(clock.now() / 1000));
      expect(await store.getSession(key('T-gone'))).toBeUndefined();
      expect(await store.getTurn(key('T-gone'), 'T-gone')).toBeDefined();
      const kicks = workQueue.sent.length;

      // Act: the producer sends the ticket again (a new send: a fresh timestamp).
      const again = acceptTicket(ticketBody('lookup-agent', 'T-gone', { ids: ['a'] }), undefined, deps, {
        sentAt: clock.now(),
      });

      // Assert
      await expect(again).rejects.toThrow(/ticket T-gone ran in a session that has expired .*; it is not run again/);
      expect(await store.getSession(key('T-gone'))).toBeUndefined();
      expect(workQueue.sent).toHaveLength(kicks);
    });

    it('converges on its session when the session is still on record, and a fresh send starts afresh', async () => {
      const { deps, clock } = makeTestDeps([lookupAgent()]);
      const sentAt = clock.now();
      const first = await acceptTicket(ticketBody('lookup-agent', 'T-long', { ids: ['a'] }), undefined, deps, {
        sentAt,
      });
      clock.advance(31 * day);
      const redelivered = acceptTicket(ticketBody('lookup-agent', 'T-long', { ids: ['a'] }), undefined, deps, {
        sentAt,
      });
      await expect(redelivered).resolves.toMatchObject({ created: false, key: first.key });
      const fresh = acceptTicket(ticketBody('lookup-agent', 'T-new', { ids: ['a'] }), undefined, deps, {
        sentAt: clock.now(),
      });
      await expect(fresh).resolves.toMatchObject({ created: true });
    });
  });

  it('refuses a ticket id reused with a different input', async () => {
    const { deps } = makeTestDeps([lookupAgent()]);
    await acceptTicket(ticketBody('lookup-agent', 'T-2', { ids: ['a'] }), undefined, deps);
    await expect(acceptTicket(ticketBody('lookup-agent', 'T-2', { ids: ['b'] }), undefined, deps)).rejects.toThrow(
      TicketConflictError,
    );
  });

  it.each([
    ['malformed JSON', '{"ticketId": "T-3", "agent":', /not valid JSON/],
    ['a missing field', JSON.stringify({ ticketId: 'T-3', input: {} }), /agent: /],
    ['a mistyped field', JSON.stringify({ ticketId: 7, agent: 'lookup-agent', input: {} }), /ticketId: /],
    ['an unknown field', JSON.stringify({ ticketId: 'T-3', agent: 'lookup-agent', input: {}, extra: 1 }), /extra/],
    ['an unknown agent', ticketBody('nobody', 'T-3', {}), /unknown agent "nobody" \(deployed: lookup-agent\)/],
    ['an agent name that could alias a key', ticketBody('a#b', 'T-3', {}), /agent must match/],
    ['invalid Unicode', ticketBody('lookup-agent', 'T-3', { ids: [String.fromCharCode(0xd800)] }), /invalid Unicode/],
  ])('refuses %s with an error that names the problem', async (_what, body, message) => {
    const { deps, workQueue } = makeTestDeps([lookupAgent()]);
    const refusal = acceptTicket(body, undefined, deps);
    await expect(refusal).rejects.toThrow(InvalidInputError);
    await expect(refusal).rejects.toThrow(message);
    expect(workQueue.sent).toHaveLength(0);
  });

  it('refuses an input over the agent’s payload cap, naming the size and the cap', async () => {
    const agent = { ...lookupAgent(), limits: { ...lookupAgent().limits, maxPayloadBytes: 1_000 } };
    const { deps } = makeTestDeps([agent]);
    await expect(
      acceptTicket(ticketBody('lookup-agent', 'T-4', { ids: ['x'.repeat(2_000)] }), undefined, deps),
    ).rejects.toThrow(PayloadTooLargeError);
  });

  it('records a refused ticket as a failed session with its reason, where status and the results queue show it', async () => {
    const { deps, store, results, clock } = makeTestDeps([lookupAgent()]);
    const body = ticketBody('lookup-agent', 'T-5', { wrong: true });
    expect(await recordRejectedTicket(body, 'input does not match', deps)).toBe(true);
    const record = await store.getSession(key('T-5'));
    expect(record?.state).toBe('failed');
    expect((await store.getTurn(key('T-5'), 'T-5'))?.outcome).toMatchObject({
      status: 'failed',
      error: 'input does not match',
    });
    expect(results.bodies[0]).toMatchObject({ ticketId: 'T-5', status: 'failed', error: 'input does not match' });
    expect(await store.findDue(0, clock.now() + 60_000, 10)).toEqual([]);
  });

  it('records a refused ticket on the trace its producer sent, so the trace id submit printed finds it', async () => {
    const { deps, store } = makeTestDeps([lookupAgent()]);
    const trace = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true };

    await recordRejectedTicket(ticketBody('no-such-agent', 'T-trace', {}), 'unknown agent', deps, {}, trace);

    const refused = {
      tenant: 'default',
      agent: 'no-such-agent',
      id: deriveSessionId('default', 'no-such-agent', 'T-trace'),
    };
    expect((await store.getSession(refused))?.traceId).toBe(trace.traceId);
  });

  it('leaves a ticket without usable ids to the DLQ and never touches an existing session', async () => {
    const { deps, store } = makeTestDeps([lookupAgent()]);
    expect(await recordRejectedTicket('not json', 'not JSON', deps)).toBe(false);
    await acceptTicket(ticketBody('lookup-agent', 'T-6', { ids: [] }), undefined, deps);
    await recordRejectedTicket(ticketBody('lookup-agent', 'T-6', { ids: ['other'] }), 'conflict', deps);
    expect((await store.getSession(key('T-6')))?.state).toBe('queued');
  });

  it('refuses a ticket nested 100,000 levels deep as invalid (not a transient stack overflow) and records it', async () => {
    const { deps, store, results, workQueue } = makeTestDeps([lookupAgent()]);
    const depth = 100_000;
    const body = `{"ticketId":"T-deep","agent":"lookup-agent","input":${'['.repeat(depth)}${']'.repeat(depth)}}`;

    const refusal = acceptTicket(body, undefined, deps);
    await expect(refusal).rejects.toThrow(InvalidInputError);
    await expect(refusal).rejects.toThrow(/ticket is nested deeper than 64 levels/);
    const error = await refusal.then(
      () => '',
      (e: Error) => e.message,
    );
    expect(await recordRejectedTicket(body, error, deps)).toBe(true);

    expect(workQueue.sent).toHaveLength(0);
    expect((await store.getSession(key('T-deep')))?.state).toBe('failed');
    expect(results.bodies[0]).toMatchObject({ ticketId: 'T-deep', status: 'failed', error });
  });

  it.each([
    ['a lone high surrogate', '\ud800'],
    ['a lone low surrogate', '\udc00'],
    ['a control character', 'T\u0000'],
  ])(
    'refuses a ticket id with %s, which would alias another id’s session, and salvages nothing from it',
    async (_what, ticketId) => {
      const { deps, workQueue } = makeTestDeps([lookupAgent()]);
      // JSON.stringify escapes the character, as a producer's serialiser would.
      const body = ticketBody('lookup-agent', ticketId, { ids: [] });

      const refusal = acceptTicket(body, undefined, deps);
      await expect(refusal).rejects.toThrow(InvalidInputError);
      await expect(refusal).rejects.toThrow(
        /ticketId: ticket id must be well-formed Unicode without control characters/,
      );
      expect(salvageIds(body)).toBeUndefined();
      expect(workQueue.sent).toHaveLength(0);
    },
  );

  describe('a ticket input in the payload bucket', () => {
    const input = { ids: ['from-the-bucket'] };
    const text = JSON.stringify(input);
    const sha256 = createHash('sha256').update(text).digest('hex');
    const bytes = Buffer.byteLength(text);
    const blobTicket = (ticketId: string, ref: Record<string, unknown>, tenant = 'default') =>
      JSON.stringify({ ticketId, agent: 'lookup-agent', tenant, input: ref });

    it('is read when its key is under its own tenant and agent and its content matches the hash', async () => {
      const { deps, blobs, store } = makeTestDeps([lookupAgent()]);
      await blobs.put('tickets/default/lookup-agent/T-b1.json', text);

      const accepted = await acceptTicket(
        blobTicket('T-b1', { $blob: 'tickets/default/lookup-agent/T-b1.json', sha256, bytes }),
        undefined,
        deps,
      );

      expect(await store.getTurn(accepted.key, 'T-b1')).toMatchObject({ input });
    });

    it.each([
      ['another tenant’s ticket', 'tickets/acme/lookup-agent/T-secret.json'],
      ['a journal payload', 'default/lookup-agent/abcdefghijklmnopqrstuvwxyz/J3-e1-w.json'],
      ['a path that climbs out of its prefix', 'tickets/default/lookup-agent/../../acme/lookup-agent/T.json'],
    ])('is refused when its key names %s, without reading it', async (_what, $blob) => {
      const { deps, blobs } = makeTestDeps([lookupAgent()]);
      await blobs.put($blob, text);
      const reads: string[] = [];
      const spying = {
        put: blobs.put.bind(blobs),
        get: async (k: string) => {
          reads.push(k);
          return blobs.get(k);
        },
      };

      const refusal = acceptTicket(blobTicket('T-b2', { $blob, sha256, bytes }), undefined, { ...deps, blobs: spying });

      await expect(refusal).rejects.toThrow(InvalidInputError);
      await expect(refusal).rejects.toThrow(/ticket input blob .* is not under tickets\/default\/lookup-agent\//);
      expect(reads).toEqual([]);
    });

    it('is refused when its content does not match the hash the ticket carries', async () => {
      const { deps, blobs } = makeTestDeps([lookupAgent()]);
      await blobs.put('tickets/default/lookup-agent/T-b3.json', JSON.stringify({ ids: ['swapped'] }));

      await expect(
        acceptTicket(
          blobTicket('T-b3', { $blob: 'tickets/default/lookup-agent/T-b3.json', sha256, bytes: bytes - 4 }),
          undefined,
          deps,
        ),
      ).rejects.toThrow(/ticket input blob .* does not match the content hash/);
    });

    it('is refused when it declares more bytes than the agent’s cap, and read no further than it declares', async () => {
      const agent = { ...lookupAgent(), limits: { ...lookupAgent().limits, maxPayloadBytes: 1_000 } };
      const { deps, blobs } = makeTestDeps([agent]);
      await blobs.put('tickets/default/lookup-agent/T-b4.json', 'x'.repeat(5_000));
      const $blob = 'tickets/default/lookup-agent/T-b4.json';

      await expect(acceptTicket(blobTicket('T-b4', { $blob, sha256, bytes: 5_000 }), undefined, deps)).rejects.toThrow(
        PayloadTooLargeError,
      );
      await expect(acceptTicket(blobTicket('T-b5', { $blob, sha256, bytes }), undefined, deps)).rejects.toThrow(
        /is larger than the \d+ bytes its pointer declares/,
      );
    });

    it('is refused when the reference lacks its hash and size, rather than taken as a literal input', async () => {
      const { deps } = makeTestDeps([lookupAgent()]);

      await expect(
        acceptTicket(blobTicket('T-b6', { $blob: 'tickets/default/lookup-agent/T-b6.json' }), undefined, deps),
      ).rejects.toThrow(/ticket input is a blob reference but is invalid: sha256: /);
    });
  });

  describe('with producers bound to tenants', () => {
    // Role AROAACME sends for acme; AROAOPS for any tenant; every other sender is unmapped.
    const producers = parseProducers('{"AROAACME":["acme"],"111122223333":["default"],"AROAOPS":["*"]}');
    const bound = () => {
      const test = makeTestDeps([lookupAgent()]);
      return { ...test, deps: { ...test.deps, config: { ...test.deps.config, producers } } };
    };
    const forTenant = (tenant: string, ticketId: string, input: unknown = { ids: [] }) =>
      JSON.stringify({ ticketId, agent: 'lookup-agent', tenant, input });
    const acme = (ticketId: string) => ({
      tenant: 'acme',
      agent: 'lookup-agent',
      id: deriveSessionId('acme', 'lookup-agent', ticketId),
    });

    it('accepts a ticket for a tenant its sender (a role session, or an account) may use', async () => {
      const { deps } = bound();

      await expect(
        acceptTicket(forTenant('acme', 'T-t1'), undefined, deps, { senderId: 'AROAACME:producer-session' }),
      ).resolves.toMatchObject({ created: true });
      await expect(
        acceptTicket(forTenant('default', 'T-t2'), undefined, deps, { senderId: '111122223333' }),
      ).resolves.toMatchObject({ created: true });
      await expect(
        acceptTicket(forTenant('anyone', 'T-t3'), undefined, deps, { senderId: 'AROAOPS:ops' }),
      ).resolves.toMatchObject({ created: true });
    });

    it.each([
      ['an unmapped role session', 'AROAEVIL:x', /sender AROAEVIL:x is not a mapped producer/],
      ['an unmapped account', '444455556666', /sender 444455556666 is not a mapped producer/],
      [
        'a producer mapped to other tenants',
        '111122223333',
        /sender 111122223333 may not submit tickets for tenant "acme"/,
      ],
      ['no sender at all', undefined, /ticket has no sender id; this deployment maps producers to tenants/],
    ])(
      'refuses a ticket from %s, publishing a failed result and creating nothing under the victim tenant',
      async (_what, senderId, message) => {
        const { deps, store, results, workQueue } = bound();
        const body = forTenant('acme', 'T-future');
        const origin = { senderId, messageId: 'msg-1' };

        const refusal = acceptTicket(body, undefined, deps, origin);
        await expect(refusal).rejects.toThrow(TenantNotAllowedError);
        await expect(refusal).rejects.toThrow(message);
        const reason = await refusal.then(
          () => '',
          (e: Error) => e.message,
        );
        expect(await recordRejectedTicket(body, reason, deps, origin)).toBe(true);

        // The victim's future ticket id stays free: no session, no turn, no kick.
        expect(await store.getSession(acme('T-future'))).toBeUndefined();
        expect(await store.getTurn(acme('T-future'), 'T-future')).toBeUndefined();
        expect(workQueue.sent).toHaveLength(0);
        // The refusal is published under its own identity, never the one the real ticket will use.
        expect(results.bodies).toEqual([
          expect.objectContaining({
            ticketId: 'refused:msg-1',
            sessionId: 'refused:msg-1',
            tenant: 'acme',
            status: 'failed',
            error: reason,
            turnId: 'refused:msg-1',
          }),
        ]);
      },
    );

    it('records an invalid ticket for a tenant its sender may not use without writing under that tenant', async () => {
      const { deps, store, results } = bound();
      const body = forTenant('acme', 'T-squat', { wrong: true }).replace('"ticketId"', '"v":2,"ticketId"');
      const origin = { senderId: '111122223333', messageId: 'msg-2' };

      await expect(acceptTicket(body, undefined, deps, origin)).rejects.toThrow(InvalidInputError);
      expect(await recordRejectedTicket(body, 'ticket is invalid: v: …', deps, origin)).toBe(true);

      expect(await store.getSession(acme('T-squat'))).toBeUndefined();
      expect(results.bodies[0]).toMatchObject({
        ticketId: 'refused:msg-2',
        sessionId: 'refused:msg-2',
        status: 'failed',
        turnId: 'refused:msg-2',
      });
      expect(results.bodies[0]?.error).toMatch(/may not submit tickets for tenant "acme"/);
    });

    it('refuses an outsider’s further turn for a session of another tenant without naming that session or its turns', async () => {
      // Arrange: acme's conversation, and a turn id acme's consumer will see for real.
      const { deps, store, results, workQueue } = bound();
      await acceptTicket(forTenant('acme', 'T-acme'), undefined, deps, { senderId: 'AROAACME:p' });
      const session = acme('T-acme');
      const body = JSON.stringify({
        ticketId: 'T-acme-turn-2',
        agent: 'lookup-agent',
        tenant: 'acme',
        sessionId: session.id,
        input: { ids: [] },
      });
      const origin = { senderId: '111122223333', messageId: 'msg-3' };
      const kicks = workQueue.sent.length;

      // Act
      const reason = await acceptTicket(body, undefined, deps, origin).then(
        () => '',
        (e: Error) => e.message,
      );
      const recorded = await recordRejectedTicket(body, reason, deps, origin);

      // Assert
      expect(reason).toMatch(/may not submit tickets for tenant "acme"/);
      expect(recorded).toBe(true);
      const published = results.bodies.at(-1);
      expect(published).toMatchObject({
        ticketId: 'refused:msg-3',
        sessionId: 'refused:msg-3',
        turnId: 'refused:msg-3',
      });
      expect(JSON.stringify(published)).not.toContain(session.id);
      expect(JSON.stringify(published)).not.toContain('T-acme');
      expect(await store.getTurn(session, 'T-acme-turn-2')).toBeUndefined();
      expect(workQueue.sent).toHaveLength(kicks);
    });
  });
});
