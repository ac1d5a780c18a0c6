import { describe, expect, it } from 'vitest';
import type { ChaosSnapshot, LedgerCall, RawEntry, RawSession } from '../../../lib/chaos/chaos-snapshot.ts';
import { checkInvariants } from '../../../lib/chaos/invariant-checker.ts';

const NOW = 1_000_000;

/** A finished one-shot session: leg, input, a once-only call with its watermark, outcome, published. */
function finishedSession(id: string, overrides: Partial<RawSession> = {}): RawSession {
  const journal: RawEntry[] = [
    { seq: 1, kind: 'leg', epoch: 1, writeId: `${id}-1`, data: { reason: 'first' } },
    { seq: 2, kind: 'input', epoch: 1, writeId: `${id}-2`, turnId: id },
    { seq: 3, kind: 'model', epoch: 1, writeId: `${id}-3`, turnId: id },
    {
      seq: 4,
      kind: 'intent',
      epoch: 1,
      writeId: `${id}-4`,
      turnId: id,
      data: { callId: 'c1', idempotencyKey: `k-${id}` },
    },
    { seq: 5, kind: 'leg', epoch: 2, writeId: `${id}-5`, data: { reason: 'recovery' } },
    { seq: 6, kind: 'reconciled', epoch: 2, writeId: `${id}-6`, turnId: id, data: { callId: 'c1', verdict: 'done' } },
    { seq: 7, kind: 'outcome', epoch: 2, writeId: `${id}-7`, turnId: id, data: { status: 'completed' } },
    { seq: 8, kind: 'published', epoch: 2, writeId: `${id}-8`, turnId: id },
  ];
  return {
    pk: `S#default#agent#${id}`,
    tenant: 'default',
    agent: 'agent',
    sessionId: id,
    record: { state: 'completed', epoch: 2, legs: 2, recoveries: 0 },
    turns: [{ turnId: id, outcome: { status: 'completed' } }],
    journal,
    ...overrides,
  };
}

const refund = (id: string): LedgerCall => ({
  service: 'refunds',
  operation: 'issueRefund',
  effect: 'once',
  idempotencyKey: `k-${id}`,
  sessionId: id,
});

function snapshot(sessions: RawSession[], extra: Partial<ChaosSnapshot> = {}): ChaosSnapshot {
  return {
    tickets: sessions.map((s) => ({
      ticketId: s.sessionId,
      tenant: 'default',
      agent: 'agent',
      sessionId: s.sessionId,
    })),
    sessions: new Map(sessions.map((s) => [s.sessionId, s])),
    results: sessions.map((s) => ({
      sessionId: s.sessionId,
      turnId: s.sessionId,
      ticketId: s.sessionId,
      status: 'completed',
    })),
    ledger: sessions.map((s) => refund(s.sessionId)),
    takenAt: NOW,
    sweepPeriodMs: 1_000,
    ...extra,
  };
}

const invariants = (snap: ChaosSnapshot) => checkInvariants(snap).violations.map((v) => v.invariant);

describe('the chaos invariant checker', () => {
  it('passes a clean run and counts its legs, recoveries and interrupted legs', () => {
    // Arrange
    const snap = snapshot([finishedSession('a'), finishedSession('b')]);

    // Act
    const { violations, figures } = checkInvariants(snap);

    // Assert
    expect(violations).toEqual([]);
    expect(figures).toMatchObject({
      tickets: 2,
      completed: 2,
      lost: 0,
      legs: 4,
      recoveries: 2,
      interruptedLegs: 2,
      onceOnlyCalls: 2,
      reconciled: 2,
      duplicateEffects: 0,
    });
  });

  it('reports a ticket without an outcome as lost', () => {
    const session = finishedSession('a', {
      turns: [{ turnId: 'a' }],
      record: { state: 'running', owner: 'o', until: NOW + 5_000, epoch: 2, legs: 2, recoveries: 0 },
    });

    const { violations, figures } = checkInvariants(snapshot([session]));

    expect(figures.lost).toBe(1);
    expect(violations.map((v) => v.invariant)).toContain('lost');
  });

  it('reports a session with pending work and an expired lease as stuck', () => {
    const session = finishedSession('a', {
      record: { state: 'queued', epoch: 2, legs: 2, recoveries: 0, sweepAt: NOW - 60_000 },
      turns: [{ turnId: 'a' }],
    });

    const { figures } = checkInvariants(snapshot([session]));

    expect(figures.stuck).toBe(1);
  });

  it('reports two outcome entries for one turn', () => {
    const base = finishedSession('a');
    const journal = [
      ...base.journal.slice(0, 7),
      { seq: 8, kind: 'outcome', epoch: 2, writeId: 'second', turnId: 'a', data: { status: 'failed' } },
      { seq: 9, kind: 'published', epoch: 2, writeId: 'p', turnId: 'a' },
    ];

    expect(invariants(snapshot([{ ...base, journal }]))).toContain('one-outcome');
  });

  it('reports a completed turn whose result never reached the results queue', () => {
    expect(invariants(snapshot([finishedSession('a')], { results: [] }))).toEqual(['published']);
  });

  it('reports results that disagree with the outcome', () => {
    const results = [
      { sessionId: 'a', turnId: 'a', ticketId: 'a', status: 'completed' },
      { sessionId: 'a', turnId: 'a', ticketId: 'a', status: 'failed' },
    ];

    expect(invariants(snapshot([finishedSession('a')], { results }))).toEqual(['one-outcome']);
  });

  it('reports a gap in the journal', () => {
    const base = finishedSession('a');
    const journal = base.journal.filter((e) => e.seq !== 3);

    expect(invariants(snapshot([{ ...base, journal }]))).toContain('gap-free');
  });

  it('reports an entry written by an epoch below the leg marker before it', () => {
    const base = finishedSession('a');
    const journal = base.journal.map((e) => (e.seq === 6 ? { ...e, epoch: 1 } : e));

    expect(invariants(snapshot([{ ...base, journal }]))).toEqual(['fenced']);
  });

  it('reports an entry from an epoch whose leg marker is missing', () => {
    const base = finishedSession('a');
    const journal = base.journal.map((e) => (e.seq === 8 ? { ...e, epoch: 3 } : e));

    expect(invariants(snapshot([{ ...base, journal }]))).toEqual(['fenced']);
  });

  it('takes a leg marker carried on an input as the marker, fencing what a stale owner writes after it', () => {
    const base = finishedSession('a');
    // The first leg's marker rides on the input: no `leg` entry before it.
    const input = (epoch: number, reason?: string): RawEntry => ({
      seq: 1,
      kind: 'input',
      epoch,
      writeId: 'a-1',
      turnId: 'a',
      data: { input: 'x', ...(reason ? { leg: { reason } } : {}) },
    });
    const swapped = [
      input(1, 'first'),
      ...base.journal.filter((e) => e.kind !== 'input' && e.seq > 1).map((e) => ({ ...e, seq: e.seq - 1 })),
    ];
    expect(invariants(snapshot([{ ...base, journal: swapped }]))).toEqual([]);
    // The recovery's marker on an input of epoch 2, then a late write of epoch 1.
    const recovered = [
      ...swapped.slice(0, 3),
      { ...input(2, 'recovery'), seq: 4, writeId: 'a-4' },
      { seq: 5, kind: 'model', epoch: 1, writeId: 'a-5', turnId: 'a' },
    ];
    expect(invariants(snapshot([{ ...base, journal: recovered }]))).toContain('fenced');
    // An input of a new epoch without a marker: the owner wrote before its marker.
    const unmarked = [input(1), ...swapped.slice(1)];
    expect(invariants(snapshot([{ ...base, journal: unmarked }]))).toContain('fenced');
  });

  it('reports one write that landed at two seqs, and a call settled twice', () => {
    const base = finishedSession('a');
    const journal = [
      ...base.journal.slice(0, 6),
      { seq: 7, kind: 'tool', epoch: 2, writeId: 'a-6', turnId: 'a', data: { callId: 'c1' } },
      { ...base.journal[6], seq: 8 } as RawEntry,
      { ...base.journal[7], seq: 9 } as RawEntry,
    ];

    const found = invariants(snapshot([{ ...base, journal }]));

    expect(found.filter((i) => i === 'once-journaled')).toHaveLength(2);
  });

  it('reports a once-only effect executed twice for one key', () => {
    const { violations, figures } = checkInvariants(
      snapshot([finishedSession('a')], { ledger: [refund('a'), refund('a')] }),
    );

    expect(figures.duplicateEffects).toBe(1);
    expect(violations.map((v) => v.invariant)).toEqual(['duplicate-effect']);
  });

  it('reports a once-only call the downstream refused because reconcile had voided its key', () => {
    const voided = { ...refund('a'), operation: 'refuse:issueRefund' };
    const refused = { ...refund('a'), operation: 'refused:issueRefund' };
    const { violations, figures } = checkInvariants(snapshot([finishedSession('a')], { ledger: [voided, refused] }));

    expect(violations.map((v) => v.invariant)).toEqual(['refused-once']);
    expect(figures.refusedOnceOnlyCalls).toBe(1);
    expect(figures.onceOnlyCalls).toBe(0);
  });

  it('reports a once-only effect that ran without a watermark', () => {
    const base = finishedSession('a');
    const journal = base.journal.map((e) =>
      e.kind === 'intent' ? { ...e, data: { callId: 'c1', idempotencyKey: 'other' } } : e,
    );

    expect(invariants(snapshot([{ ...base, journal }]))).toEqual(['watermark']);
  });

  it('accepts a crash loop whose counted legs made no progress, and refuses one that did', () => {
    // Arrange: epochs 2–4 are recoveries; epoch 4 declares a crash loop of 3 recoveries.
    const failedWith = (stepEpoch: number) =>
      finishedSession('a', {
        record: { state: 'failed', epoch: 4, legs: 4, recoveries: 0 },
        turns: [
          {
            turnId: 'a',
            outcome: { status: 'failed', error: 'crash loop: 3 consecutive recoveries without progress' },
          },
        ],
        journal: [
          { seq: 1, kind: 'leg', epoch: 1, writeId: '1', data: { reason: 'first' } },
          { seq: 2, kind: 'input', epoch: 1, writeId: '2', turnId: 'a' },
          { seq: 3, kind: 'leg', epoch: 2, writeId: '3', data: { reason: 'recovery' } },
          { seq: 4, kind: 'leg', epoch: 3, writeId: '4', data: { reason: 'recovery' } },
          { seq: 5, kind: 'model', epoch: 3, writeId: '5', turnId: 'a' },
          { seq: 6, kind: 'leg', epoch: 4, writeId: '6', data: { reason: 'recovery' } },
          { seq: 7, kind: 'outcome', epoch: 4, writeId: '7', turnId: 'a', data: { status: 'failed' } },
          { seq: 8, kind: 'published', epoch: 4, writeId: '8', turnId: 'a' },
        ].map((e) => (e.seq === 5 ? { ...e, epoch: stepEpoch } : e)) as RawEntry[],
      });
    const results = [{ sessionId: 'a', turnId: 'a', ticketId: 'a', status: 'failed' }];

    // Act
    const honest = checkInvariants(
      snapshot(
        [failedWith(1)].map((s) => ({
          ...s,
          journal: s.journal.filter((e) => e.seq !== 5).map((e, i) => ({ ...e, seq: i + 1 })),
        })),
        { results, ledger: [] },
      ),
    );
    const contradicted = checkInvariants(snapshot([failedWith(3)], { results, ledger: [] }));

    // Assert
    expect(honest.violations).toEqual([]);
    expect(honest.figures.crashLoops).toBe(1);
    expect(contradicted.violations.map((v) => v.invariant)).toEqual(['runtime-failure']);
  });

  it('checks background tasks: each listed by its parent, each with an outcome, none reported lost', () => {
    // Arrange: a parent that started tasks t1 and t2; t3 is a child its journal never lists.
    const start = (seq: number, taskId: string): RawEntry => ({
      seq,
      kind: 'tool',
      epoch: 2,
      writeId: `p-${seq}`,
      turnId: 'p',
      data: { callId: `s${seq}`, tool: 'start_task', ok: true, output: { taskId } },
    });
    const base = finishedSession('p');
    const parent: RawSession = {
      ...base,
      journal: [
        ...base.journal.slice(0, 2),
        start(3, 't1'),
        start(4, 't2'),
        ...base.journal.slice(3).map((e) => ({ ...e, seq: e.seq + 1 })),
      ],
    };
    const child = (id: string, outcome: boolean): RawSession => {
      const done = finishedSession(id);
      return {
        ...done,
        record: { ...done.record!, state: 'idle', conversation: true, parentId: 'p' },
        turns: [{ turnId: `task-${id}`, ...(outcome ? { outcome: { status: 'completed' } } : {}) }],
        journal: done.journal.map((e) => (e.turnId ? { ...e, turnId: `task-${id}` } : e)),
      };
    };
    const snap: ChaosSnapshot = {
      ...snapshot([parent]),
      sessions: new Map(
        [parent, child('t1', true), child('t2', false), child('t3', true)].map((s) => [s.sessionId, s]),
      ),
    };

    // Act
    const { violations, figures } = checkInvariants(snap);

    // Assert
    expect(figures.tasks).toBe(3);
    expect(violations.filter((v) => v.invariant === 'lost-task').map((v) => v.sessionId)).toEqual(['t2']);
    expect(violations.filter((v) => v.invariant === 'duplicate-task').map((v) => v.sessionId)).toEqual(['t3']);
    expect(violations.filter((v) => v.invariant === 'stuck')).toEqual([]);
  });

  describe('conversations', () => {
    /** A support-desk conversation: a first turn, `work` with a message injected, an approved refund. */
    function conversation(options: { refundFirst?: boolean; noteJournaled?: boolean; workOutcome?: boolean } = {}) {
      const id = 'c';
      let seq = 0;
      const entry = (kind: string, turnId?: string, data?: Record<string, unknown>): RawEntry => ({
        seq: ++seq,
        kind,
        epoch: 1,
        writeId: `${id}-${seq + 1}`,
        ...(turnId ? { turnId } : {}),
        ...(data ? { data } : {}),
      });
      const turn = (turnId: string, middle: (() => RawEntry[]) | undefined, outcome = true) => [
        entry('input', turnId),
        ...(middle?.() ?? [entry('model', turnId)]),
        ...(outcome ? [entry('outcome', turnId, { status: 'completed' }), entry('published', turnId)] : []),
      ];
      const refundTurn = () =>
        turn('c-refund', () => [
          entry('model', 'c-refund'),
          entry('approval', 'c-refund', { callId: 't3-refund' }),
          entry('decision', 'c-refund', { callId: 't3-refund', approved: true }),
          entry('intent', 'c-refund', { callId: 't3-refund', idempotencyKey: 'k-c' }),
          entry('tool', 'c-refund', { callId: 't3-refund', tool: 'issueRefund', ok: true }),
        ]);
      const workTurn = () =>
        turn(
          'c-work',
          () => [
            entry('model', 'c-work'),
            ...(options.noteJournaled === false ? [] : [entry('message', 'c-work', { text: 'VIP', id: 'c-note' })]),
            entry('model', 'c-work'),
          ],
          options.workOutcome !== false,
        );
      const journal = [
        entry('leg', undefined, { reason: 'first' }),
        ...turn('c', undefined),
        ...(options.refundFirst ? [...refundTurn(), ...workTurn()] : [...workTurn(), ...refundTurn()]),
      ];
      const session: RawSession = {
        pk: `S#default#support-desk#${id}`,
        tenant: 'default',
        agent: 'support-desk',
        sessionId: id,
        record: {
          state: 'idle',
          epoch: 1,
          legs: 1,
          recoveries: 0,
          conversation: true,
          pendingVersion: 3,
          seenVersion: 3,
        },
        turns: ['c', 'c-work', 'c-refund']
          .filter((t) => t !== 'c-work' || options.workOutcome !== false)
          .map((turnId) => ({ turnId, outcome: { status: 'completed' } })),
        journal,
      };
      const ticket = {
        ticketId: id,
        tenant: 'default',
        agent: 'support-desk',
        sessionId: id,
        conversation: {
          turns: ['c-work', 'c-refund'],
          injected: ['c-note'],
          refundTurnId: 'c-refund',
          unsent: [] as string[],
        },
      };
      const snap: ChaosSnapshot = {
        ...snapshot([session]),
        tickets: [ticket],
        results: ['c', 'c-work', 'c-refund'].map((turnId) => ({
          sessionId: id,
          turnId,
          ticketId: turnId,
          status: 'completed',
        })),
      };
      return { snap, ticket };
    }

    it('passes a conversation whose turns all ended, in order, with its message journaled and one refund', () => {
      // Arrange
      const { snap } = conversation();

      // Act
      const { violations, figures } = checkInvariants(snap);

      // Assert
      expect(violations).toEqual([]);
      expect(figures).toMatchObject({
        conversations: 1,
        conversationTurns: 2,
        injectedMessages: 1,
        completed: 3,
        lost: 0,
      });
    });

    it('flags turns out of order, a refund run twice, and a lost turn, message or unsent input', () => {
      // Arrange
      const reordered = conversation({ refundFirst: true }).snap;
      const twice = conversation().snap;
      const refundedTwice: ChaosSnapshot = {
        ...twice,
        ledger: [refund('c'), { ...refund('c'), idempotencyKey: 'k-c2' }],
      };
      const dropped = conversation({ noteJournaled: false, workOutcome: false });
      dropped.ticket.conversation.unsent.push('c-later');

      // Act
      const order = checkInvariants(reordered);
      const refunds = checkInvariants(refundedTwice);
      const lost = checkInvariants(dropped.snap);

      // Assert
      expect(order.violations.map((v) => v.invariant)).toEqual(['turn-order']);
      // The second key has no intent before it either.
      expect(refunds.violations.map((v) => v.invariant)).toEqual(['refund-once', 'watermark']);
      expect(lost.figures.lost).toBe(3);
      expect(lost.violations.filter((v) => v.invariant === 'lost').map((v) => v.detail)).toEqual([
        expect.stringContaining('turn c-work: no outcome'),
        expect.stringContaining('c-later was never sent'),
        expect.stringContaining('message c-note'),
      ]);
    });
  });
});
