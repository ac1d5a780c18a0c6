import type { ChaosSnapshot, LedgerCall, RawEntry, RawSession } from './chaos-snapshot.ts';

/** The invariants a chaos run checks, each named as the report prints it. */
export const Invariant = {
  /** A submitted ticket without a terminal outcome. */
  lost: 'lost',
  /** Two outcomes for one turn, or outcomes that disagree (journal, turn, record, results). */
  oneOutcome: 'one-outcome',
  /** A finished turn whose result never reached the results queue. */
  published: 'published',
  /** A once-only effect executed twice for one key. */
  duplicateEffect: 'duplicate-effect',
  /** A once-only call the downstream refused (its key voided by reconcile): the effect never happens. */
  refusedOnce: 'refused-once',
  /** A once-only effect with no watermark (intent entry) before it. */
  watermark: 'watermark',
  /** Pending work and no live owner after the sweeper's period. */
  stuck: 'stuck',
  /** A journal with a missing seq. */
  gapFree: 'gap-free',
  /** An entry written by an epoch other than the leg marker before it (a stale or unmarked owner). */
  fenced: 'fenced',
  /** A completed step journaled twice (a tool result, a write landing at two seqs). */
  onceJournaled: 'once-journaled',
  /** A turn the runtime failed for a reason chaos must never cause (crash loop, corrupt state, …). */
  runtimeFailure: 'runtime-failure',
  /** A background task reported lost, or started with no outcome. */
  lostTask: 'lost-task',
  /** A task's session that its parent's journal does not list (a start that ran twice). */
  duplicateTask: 'duplicate-task',
  /** A conversation's turns that did not run in the order sent (a turn began before the one before it ended). */
  turnOrder: 'turn-order',
  /** A conversation's approved refund that did not run exactly once. */
  refundOnce: 'refund-once',
} as const;
export type Invariant = (typeof Invariant)[keyof typeof Invariant];

export interface Violation {
  readonly invariant: Invariant;
  readonly sessionId?: string | undefined;
  readonly detail: string;
}

/** Counts the checker derives from the journals and the ledger. */
export interface ChaosFigures {
  readonly tickets: number;
  readonly completed: number;
  readonly failed: number;
  readonly cancelled: number;
  readonly lost: number;
  readonly stuck: number;
  readonly duplicateEffects: number;
  readonly legs: number;
  readonly recoveries: number;
  readonly continuations: number;
  readonly retries: number;
  /** Legs that ended without a hand-off and had made progress: a kill or a pause landed mid-leg. */
  readonly interruptedLegs: number;
  readonly steps: number;
  readonly onceOnlyCalls: number;
  /** Once-only calls the downstream refused because reconcile had voided their key. */
  readonly refusedOnceOnlyCalls: number;
  readonly reconciled: number;
  /** Result messages drained, duplicates included (delivery is at least once). */
  readonly resultMessages: number;
  /** Failed turns, by reason (shortened). */
  readonly failures: Readonly<Record<string, number>>;
  /** Turns failed as crash loops whose counted legs indeed made no progress (the designed outcome, not a violation). */
  readonly crashLoops: number;
  /** Acquires whose owner died (or was fenced) before its leg marker landed. */
  readonly unmarkedLegs: number;
  /** Background tasks (child sessions) the delegating tickets started. */
  readonly tasks: number;
  /** Conversation tickets, the further turns sent to them, and the messages injected into running turns. */
  readonly conversations: number;
  readonly conversationTurns: number;
  readonly injectedMessages: number;
}

export interface CheckOptions {
  /** A failed outcome chaos may legitimately cause; default: a transient downstream error that outlasted its retries. */
  readonly acceptableFailure?: ((error: string) => boolean) | undefined;
}

/** Retries of a simulated transient error, exhausted: an honest outcome, not a runtime fault. */
export const TRANSIENT_EXHAUSTED = /failed \d+ times; last error: .*\(transient\)/;

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const STEP_KINDS = new Set(['model', 'tool', 'reconciled', 'compaction']);

/**
 * Checks a chaos run's snapshot against Baton's invariants. Pure: reads only the snapshot.
 * @example const { violations, figures } = checkInvariants(snapshot);
 */
export function checkInvariants(
  snapshot: ChaosSnapshot,
  options: CheckOptions = {},
): { violations: Violation[]; figures: ChaosFigures } {
  const acceptable = options.acceptableFailure ?? ((error: string) => TRANSIENT_EXHAUSTED.test(error));
  const violations: Violation[] = [];
  const add = (invariant: Invariant, sessionId: string | undefined, detail: string) =>
    violations.push({ invariant, sessionId, detail });

  let completed = 0;
  let failed = 0;
  let cancelled = 0;
  let lost = 0;
  let crashLoops = 0;
  const failures: Record<string, number> = {};
  const resultsByTurn = new Map<string, Set<string>>();
  for (const result of snapshot.results) {
    const id = `${result.sessionId}/${result.turnId}`;
    resultsByTurn.set(id, (resultsByTurn.get(id) ?? new Set()).add(result.status));
  }

  // Every ticket's turn, and every further turn the runner sent to a conversation.
  const turnsToCheck = snapshot.tickets.flatMap((ticket) =>
    [ticket.ticketId, ...(ticket.conversation?.turns ?? [])].map((turnId) => ({ ticket, turnId })),
  );
  for (const { ticket, turnId } of turnsToCheck) {
    const session = snapshot.sessions.get(ticket.sessionId);
    if (!session?.record) {
      lost++;
      add(Invariant.lost, ticket.sessionId, `ticket ${ticket.ticketId}, turn ${turnId}: no session record`);
      continue;
    }
    const turn = session.turns.find((t) => t.turnId === turnId);
    const outcome = turn?.outcome;
    if (!outcome) {
      lost++;
      const { state, owner, until } = session.record;
      add(
        Invariant.lost,
        ticket.sessionId,
        `ticket ${ticket.ticketId}, turn ${turnId}: no outcome (state ${state}, owner ${owner ?? 'none'}, lease until ${until ?? '-'})`,
      );
      continue;
    }
    if (outcome.status === 'completed') completed++;
    else if (outcome.status === 'cancelled') cancelled++;
    else if (outcome.status === 'failed') {
      failed++;
      const reason = (outcome.error ?? 'no reason').replace(/[0-9a-f]{8,}|\d+/g, '#').slice(0, 120);
      failures[reason] = (failures[reason] ?? 0) + 1;
      const crashLoop = CRASH_LOOP.exec(outcome.error ?? '');
      if (crashLoop) {
        const progress = progressInsideCrashLoop(session, Number(crashLoop[1]));
        if (progress === undefined) crashLoops++;
        else
          add(
            Invariant.runtimeFailure,
            ticket.sessionId,
            `ticket ${ticket.ticketId} failed as a crash loop, yet ${progress}`,
          );
      } else if (!acceptable(outcome.error ?? '')) {
        add(Invariant.runtimeFailure, ticket.sessionId, `ticket ${ticket.ticketId} failed: ${outcome.error}`);
      }
    }

    // An outcome written before the turn's input entry (a crash loop on the first legs) has no turn id.
    const journaled = session.journal.filter(
      (e) => e.kind === 'outcome' && (e.turnId === turnId || e.turnId === undefined),
    );
    if (journaled.length !== 1) {
      add(Invariant.oneOutcome, ticket.sessionId, `turn ${turnId} has ${journaled.length} outcome entries`);
    } else if (journaled[0]?.data?.status !== outcome.status) {
      add(
        Invariant.oneOutcome,
        ticket.sessionId,
        `turn ${turnId}: journal says ${String(journaled[0]?.data?.status)}, turn says ${outcome.status}`,
      );
    }
    const recordState = session.record.state;
    // A conversation (the dispatcher) goes idle after a turn, whatever its outcome, unless cancelled.
    const expectedState =
      session.record.conversation && outcome.status !== 'cancelled'
        ? 'idle'
        : outcome.status === 'superseded'
          ? 'completed'
          : outcome.status;
    if (recordState !== expectedState) {
      add(
        Invariant.oneOutcome,
        ticket.sessionId,
        `turn ${turnId} is ${outcome.status} but the session is ${recordState}`,
      );
    }
    const published = resultsByTurn.get(`${ticket.sessionId}/${turnId}`);
    if (!published) add(Invariant.published, ticket.sessionId, `turn ${turnId} (${outcome.status}) has no result`);
    else if (published.size > 1 || !published.has(outcome.status)) {
      add(
        Invariant.oneOutcome,
        ticket.sessionId,
        `turn ${turnId} is ${outcome.status}; results say ${[...published].join(', ')}`,
      );
    }
    const publishedEntries = session.journal.filter((e) => e.kind === 'published' && e.turnId === turnId).length;
    if (publishedEntries > 1)
      add(Invariant.oneOutcome, ticket.sessionId, `turn ${turnId} was marked published ${publishedEntries} times`);
  }

  let stuck = 0;
  for (const session of snapshot.sessions.values()) {
    const record = session.record;
    if (!record || TERMINAL.has(record.state)) continue;
    // Idle with nothing new to take: a conversation between turns, not stuck.
    if (record.state === 'idle' && (record.pendingVersion ?? 0) <= (record.seenVersion ?? 0)) continue;
    const leaseDead = record.owner === undefined || (record.until ?? 0) < snapshot.takenAt - snapshot.sweepPeriodMs;
    if (leaseDead) {
      stuck++;
      add(
        Invariant.stuck,
        session.sessionId,
        `state ${record.state}, owner ${record.owner ?? 'none'}, lease until ${record.until ?? '-'}, sweepAt ${record.sweepAt ?? 'none'}`,
      );
    }
  }

  const journalFigures = {
    legs: 0,
    recoveries: 0,
    continuations: 0,
    retries: 0,
    interruptedLegs: 0,
    steps: 0,
    reconciled: 0,
  };
  let unmarkedLegs = 0;
  for (const session of snapshot.sessions.values()) {
    checkJournal(session, add, journalFigures);
    const markers = session.journal.filter((e) => legMarker(e) !== undefined).length;
    unmarkedLegs += Math.max(0, (session.record?.epoch ?? 0) - markers);
  }

  const tasks = checkTasks(snapshot, add);
  const conversationFigures = checkConversations(snapshot, add);
  lost += conversationFigures.lost;

  const onceCalls = snapshot.ledger.filter((l) => l.effect === 'once' && isEffect(l));
  const refusedCalls = snapshot.ledger.filter((l) => l.effect === 'once' && l.operation.startsWith(REFUSED));
  for (const call of refusedCalls) {
    add(
      Invariant.refusedOnce,
      call.sessionId,
      `${call.service}:${call.operation.slice(REFUSED.length)} was refused for key ${call.idempotencyKey}, which reconcile had voided`,
    );
  }
  const duplicates = duplicateOnceKeys(onceCalls);
  for (const [id, count] of duplicates) {
    add(Invariant.duplicateEffect, sessionOf(onceCalls, id), `${id} executed ${count} times`);
  }
  const watermarks = new Set<string>();
  for (const session of snapshot.sessions.values()) {
    for (const entry of session.journal) {
      const key = entry.kind === 'intent' ? entry.data?.idempotencyKey : undefined;
      if (typeof key === 'string') watermarks.add(key);
    }
  }
  for (const call of onceCalls) {
    if (!watermarks.has(call.idempotencyKey) && snapshot.sessions.has(call.sessionId)) {
      add(
        Invariant.watermark,
        call.sessionId,
        `${call.service}:${call.operation} ran with key ${call.idempotencyKey} and no intent`,
      );
    }
  }

  return {
    violations,
    figures: {
      tickets: snapshot.tickets.length,
      completed,
      failed,
      cancelled,
      lost,
      stuck,
      duplicateEffects: duplicates.size,
      ...journalFigures,
      onceOnlyCalls: onceCalls.length,
      refusedOnceOnlyCalls: refusedCalls.length,
      resultMessages: snapshot.results.length,
      failures,
      crashLoops,
      unmarkedLegs,
      tasks,
      conversations: conversationFigures.conversations,
      conversationTurns: conversationFigures.turns,
      injectedMessages: conversationFigures.injected,
    },
  };
}

/**
 * Background tasks: every child session is listed by its parent's journal (a start_task result
 * naming it), so no start ran twice; every listed task reached an outcome on its first turn; no
 * parent's answer reports a task lost. Returns how many tasks there were.
 */
function checkTasks(
  snapshot: ChaosSnapshot,
  add: (invariant: Invariant, sessionId: string | undefined, detail: string) => void,
): number {
  const listed = new Map<string, Set<string>>();
  for (const session of snapshot.sessions.values()) {
    for (const entry of session.journal) {
      const output =
        entry.kind === 'tool' && entry.data?.tool === 'start_task' && entry.data.ok === true
          ? (entry.data.output as { taskId?: unknown } | undefined)
          : undefined;
      if (typeof output?.taskId === 'string')
        listed.set(session.sessionId, (listed.get(session.sessionId) ?? new Set()).add(output.taskId));
      if (entry.kind === 'outcome' && JSON.stringify(entry.data?.output ?? null).includes('"status":"lost"'))
        add(Invariant.lostTask, session.sessionId, `turn ${entry.turnId}: the answer reports a task lost`);
    }
  }
  let tasks = 0;
  for (const session of snapshot.sessions.values()) {
    const parentId = session.record?.parentId;
    if (parentId === undefined) continue;
    tasks++;
    if (!listed.get(parentId)?.has(session.sessionId)) {
      const cancelledBeforeStart = session.record?.state === 'cancelled';
      // A start whose result a killed parent never journaled is cancelled by the release or cancel that follows.
      if (!cancelledBeforeStart)
        add(Invariant.duplicateTask, session.sessionId, `task of ${parentId} that its parent's journal does not list`);
      continue;
    }
    const first = session.turns.find((t) => t.turnId === `task-${session.sessionId}`);
    if (!first?.outcome)
      add(Invariant.lostTask, session.sessionId, `task of ${parentId} has no outcome (state ${session.record?.state})`);
  }
  return tasks;
}

/**
 * Conversations: what the runner planned and never sent is lost; each injected message is
 * journaled exactly once; turns ran in the order sent (each turn's input after the outcome of the
 * one before); an approved refund that completed ran exactly once in the ledger.
 */
function checkConversations(
  snapshot: ChaosSnapshot,
  add: (invariant: Invariant, sessionId: string | undefined, detail: string) => void,
): { conversations: number; turns: number; injected: number; lost: number } {
  const figures = { conversations: 0, turns: 0, injected: 0, lost: 0 };
  for (const ticket of snapshot.tickets) {
    const log = ticket.conversation;
    if (!log) continue;
    figures.conversations++;
    figures.turns += log.turns.length;
    figures.injected += log.injected.length;
    for (const id of log.unsent) {
      figures.lost++;
      add(Invariant.lost, ticket.sessionId, `conversation ${ticket.ticketId}: ${id} was never sent`);
    }
    const journal = snapshot.sessions.get(ticket.sessionId)?.journal ?? [];
    for (const id of log.injected) {
      const copies = journal.filter((e) => e.kind === 'message' && e.data?.id === id).length;
      if (copies === 0) figures.lost++;
      if (copies !== 1)
        add(
          copies === 0 ? Invariant.lost : Invariant.onceJournaled,
          ticket.sessionId,
          `message ${id} injected into a running turn is journaled ${copies} times`,
        );
    }
    const seqOf = (kind: string, turnId: string) => journal.find((e) => e.kind === kind && e.turnId === turnId)?.seq;
    const order = [ticket.ticketId, ...log.turns];
    for (let k = 1; k < order.length; k++) {
      const endedAt = seqOf('outcome', order[k - 1] as string);
      const beganAt = seqOf('input', order[k] as string);
      if (endedAt !== undefined && beganAt !== undefined && beganAt < endedAt)
        add(
          Invariant.turnOrder,
          ticket.sessionId,
          `turn ${order[k]} began at seq ${beganAt}, before turn ${order[k - 1]} ended at seq ${endedAt}`,
        );
    }
    const refundTurn = log.refundTurnId;
    const refundDone = refundTurn
      ? snapshot.sessions.get(ticket.sessionId)?.turns.find((t) => t.turnId === refundTurn)?.outcome?.status ===
        'completed'
      : false;
    const refunds = snapshot.ledger.filter(
      (l) => l.sessionId === ticket.sessionId && l.operation === 'issueRefund' && isEffect(l),
    ).length;
    if (refundDone ? refunds !== 1 : refunds > 1)
      add(Invariant.refundOnce, ticket.sessionId, `turn ${refundTurn} completed with ${refunds} refunds in the ledger`);
  }
  return figures;
}

/** Ledger operations that are not effects: a key voided by reconcile, and a call refused for one. */
const VOIDED = 'refuse:';
const REFUSED = 'refused:';
const isEffect = (call: LedgerCall): boolean =>
  !call.operation.startsWith(VOIDED) && !call.operation.startsWith(REFUSED);

const CRASH_LOOP = /^crash loop: (\d+) consecutive recoveries without progress/;

/**
 * A crash-loop outcome is honest only if none of the legs it counts journaled progress: the
 * counter is reset by a leg that progresses. The outcome's epoch E and its count R bound them:
 * epochs E−R+1 … E−1 must hold no entry but leg markers. Returns what contradicts it, if anything.
 */
function progressInsideCrashLoop(session: RawSession, recoveries: number): string | undefined {
  const outcome = session.journal.find((e) => e.kind === 'outcome');
  if (!outcome) return undefined;
  const first = outcome.epoch - recoveries + 1;
  const progress = session.journal.find(
    (e) => e.kind !== 'leg' && e.kind !== 'outcome' && e.epoch >= first && e.epoch < outcome.epoch,
  );
  return (
    progress &&
    `epoch ${progress.epoch} journaled ${progress.kind} at seq ${progress.seq} inside its ${recoveries} counted recoveries`
  );
}

type Add = (invariant: Invariant, sessionId: string | undefined, detail: string) => void;
type JournalFigures = {
  legs: number;
  recoveries: number;
  continuations: number;
  retries: number;
  interruptedLegs: number;
  steps: number;
  reconciled: number;
};

/**
 * Gap-free seqs from 1; every entry written by the epoch of the leg marker before it (lower: a
 * stale owner wrote after being fenced; higher: an owner wrote before its marker); each write
 * landing once; each tool call of a model entry settled at most once.
 */
function checkJournal(session: RawSession, add: Add, figures: JournalFigures): void {
  const id = session.sessionId;
  let legEpoch = 0;
  let legProgress = 0;
  let lastMarkerSeen = false;
  const writeIds = new Set<string>();
  let settled = new Set<string>();
  let intents = new Set<string>();
  for (const [index, entry] of session.journal.entries()) {
    if (entry.seq !== index + 1) {
      add(Invariant.gapFree, id, `seq ${entry.seq} stands at position ${index + 1}`);
      return;
    }
    if (writeIds.has(entry.writeId))
      add(Invariant.onceJournaled, id, `write ${entry.writeId} landed twice (seq ${entry.seq})`);
    writeIds.add(entry.writeId);
    // An input offloaded to the payload bucket is unread here: a later epoch's can only be its leg's first write.
    const offloadedInput = entry.kind === 'input' && entry.data === undefined && entry.epoch > legEpoch;
    const marker = offloadedInput ? {} : legMarker(entry);
    if (marker) {
      if (entry.epoch <= legEpoch)
        add(Invariant.fenced, id, `leg marker at seq ${entry.seq} has epoch ${entry.epoch} after epoch ${legEpoch}`);
      const reason = marker.reason;
      figures.legs++;
      if (reason === 'recovery') {
        figures.recoveries++;
        if (lastMarkerSeen && legProgress > 0) figures.interruptedLegs++;
      }
      if (reason === 'continuation') figures.continuations++;
      if (reason === 'retry') figures.retries++;
      legEpoch = Math.max(legEpoch, entry.epoch);
      legProgress = 0;
      lastMarkerSeen = true;
      // An input that carries its leg's marker is also the leg's first entry.
      if (entry.kind === 'leg') continue;
    }
    if (!lastMarkerSeen) add(Invariant.fenced, id, `seq ${entry.seq} (${entry.kind}) precedes any leg marker`);
    if (entry.epoch < legEpoch) {
      add(
        Invariant.fenced,
        id,
        `seq ${entry.seq} (${entry.kind}) has epoch ${entry.epoch} after the leg marker of epoch ${legEpoch}`,
      );
    } else if (entry.epoch > legEpoch) {
      add(
        Invariant.fenced,
        id,
        `seq ${entry.seq} (${entry.kind}) has epoch ${entry.epoch}, whose leg marker is missing`,
      );
    }
    legProgress++;
    if (STEP_KINDS.has(entry.kind)) figures.steps++;
    checkSettlement(entry, settled, intents, (detail) => add(Invariant.onceJournaled, id, detail));
    if (entry.kind === 'reconciled') figures.reconciled++;
    if (entry.kind === 'model' || entry.kind === 'input') {
      settled = new Set();
      intents = new Set();
    }
  }
}

/** The leg marker an entry carries: a `leg` entry's, or the one on the input its leg started with. */
function legMarker(entry: RawEntry): Record<string, unknown> | undefined {
  if (entry.kind === 'leg') return entry.data ?? {};
  const leg = entry.kind === 'input' ? entry.data?.leg : undefined;
  return typeof leg === 'object' && leg !== null ? (leg as Record<string, unknown>) : undefined;
}

function checkSettlement(entry: RawEntry, settled: Set<string>, intents: Set<string>, fail: (detail: string) => void) {
  const callId = typeof entry.data?.callId === 'string' ? entry.data.callId : undefined;
  if (callId === undefined) return;
  if (entry.kind === 'intent') {
    if (intents.has(callId)) fail(`call ${callId} got a second watermark at seq ${entry.seq}`);
    intents.add(callId);
  }
  const settles = entry.kind === 'tool' || (entry.kind === 'reconciled' && entry.data?.verdict === 'done');
  if (entry.kind === 'reconciled' && entry.data?.verdict === 'notDone') intents.delete(callId);
  if (!settles) return;
  if (settled.has(callId)) fail(`call ${callId} settled twice (again at seq ${entry.seq})`);
  settled.add(callId);
}

function duplicateOnceKeys(calls: readonly LedgerCall[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const call of calls) {
    const id = `${call.service}:${call.operation}:${call.idempotencyKey}`;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return new Map([...counts].filter(([, n]) => n > 1));
}

const sessionOf = (calls: readonly LedgerCall[], id: string): string | undefined =>
  calls.find((c) => id.endsWith(`:${c.idempotencyKey}`))?.sessionId;
