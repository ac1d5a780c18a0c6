import { META_SK } from '../../lib/adapters/session-item-codec.ts';
import { CorruptStateError, errorMessage } from '../../lib/core/errors.ts';
import { foldJournal, type SessionView } from '../../lib/core/fold.ts';
import { TURN_STOPPED } from '../../lib/core/inbox.ts';
import type { JournalEntry } from '../../lib/core/journal.ts';
import { TERMINAL_SESSION_STATES } from '../../lib/core/vocabulary.ts';
import type { SessionRecord, TurnRecord } from '../../lib/ports/session-store.ts';
import { INJECTED_TEXT } from './faults.ts';
import { inputDigest } from './services.ts';
import type { World } from './world.ts';

/**
 * The promises a run is held to, checked on the store, the results queue and the downstream's
 * record of executions, at the end of the drain (and at each quiet moment before an idle gap,
 * so a finished session whose items then expire was seen to have ended well). Each invariant is
 * named as RELIABILITY.md's promises are: a violation prints `<invariant>: <what broke>`.
 */

/** What the store holds of one session, read without gates. */
interface SessionFacts {
  readonly record: SessionRecord;
  readonly entries: readonly JournalEntry[] | undefined;
  readonly view: SessionView | undefined;
  readonly turns: readonly TurnRecord[];
  readonly terminal: boolean;
}

async function readWorld(world: World): Promise<Map<string, SessionFacts>> {
  const sessions = new Map<string, SessionFacts>();
  const records = await world.memory.listSessions({ limit: 100_000 });
  for (const record of records) {
    const id = record.key.id;
    if (world.facts.retired.has(id)) continue;
    let entries: JournalEntry[] | undefined;
    let view: SessionView | undefined;
    try {
      entries = await world.memory.readJournal(record.key);
      view = foldJournal(entries);
    } catch (error) {
      if (!(error instanceof CorruptStateError)) throw error;
      view = undefined;
    }
    const turns = await world.memory.listTurns(record.key);
    sessions.set(id, { record, entries, view, turns, terminal: TERMINAL_SESSION_STATES.includes(record.state) });
  }
  return sessions;
}

/** Checks run whenever the world is quiet: nothing running, nothing queued. */
async function checkQuiet(world: World, sessions: Map<string, SessionFacts>): Promise<void> {
  const { facts } = world;
  const results = new Map<string, Set<string>>();
  for (const [index, { id, result }] of world.results.published.entries()) {
    if (facts.beforeExpiry(id.split('/')[0] ?? '', index, 'results')) continue;
    const statuses = results.get(id) ?? new Set<string>();
    statuses.add(result.status);
    results.set(id, statuses);
  }

  for (const [id, s] of sessions) {
    checkJournal(world, id, s);
    for (const turn of s.turns) {
      // A refused ticket's result carries an id of its own (`<turn>~rejected-…`): it answers for the turn.
      const own = `${id}/${turn.turnId}`;
      const refused = turn.outcome?.error?.includes(`turn ${turn.turnId} refused`) === true;
      const statuses = new Set(
        [...results]
          .filter(([rid]) => rid === own || (refused && rid.startsWith(`${own}~rejected-`)))
          .flatMap(([, st]) => [...st]),
      );
      checkTurn(world, id, s, turn, statuses);
    }
    checkExpiry(world, id, s);
  }

  for (const [resultId, statuses] of results) {
    const [sid, ...rest] = resultId.split('/');
    const turnId = rest.join('/');
    if (statuses.size > 1)
      facts.violate('one-outcome', `${resultId}: results published with statuses ${[...statuses].join(', ')}`);
    const s = sessions.get(sid ?? '');
    // A refused ticket's result carries a turn id of its own; a retired session's items are gone.
    if (!s || turnId.includes('~rejected-') || turnId.startsWith('refused:')) continue;
    if (!s.turns.some((t) => t.turnId === turnId && t.outcome))
      facts.violate('result-matches-turn', `${resultId}: a result was published for a turn with no outcome`);
  }

  for (const [id, accepted] of facts.turns) {
    if (facts.verified.has(id) || facts.retired.has(accepted.key.id)) continue;
    const s = sessions.get(accepted.key.id);
    if (!s?.turns.some((t) => t.turnId === accepted.turnId))
      facts.violate('accepted-kept', `${id}: an accepted turn (${accepted.via}) is gone from the store`);
  }

  checkEffects(world, sessions);
  checkStops(world, sessions);

  for (const key of facts.cancels) {
    const s = sessions.get(key.id);
    if (!s) continue;
    if (!s.terminal || (s.record.conversation && s.record.state !== 'cancelled'))
      facts.violate(
        'cancel-carried-out',
        `${key.id}: cancel answered requested, the session ended ${s.record.state} (cancelRequested ${s.record.cancelRequested})`,
      );
  }
}

function checkJournal(world: World, id: string, s: SessionFacts): void {
  const first = s.entries?.[0];
  if (first !== undefined && first.seq !== 1 && !s.terminal) {
    world.facts.violate(
      'journal-outlives-nothing-it-needs',
      `${id}: a live ${s.record.state} session's journal starts at seq ${first.seq} (its head expired before its record)`,
    );
    return;
  }
  if (s.entries !== undefined && s.view === undefined) {
    try {
      foldJournal(s.entries);
    } catch (error) {
      world.facts.violate('journal-intact', `${id}: ${errorMessage(error)}`);
    }
  }
}

function checkTurn(
  world: World,
  id: string,
  s: SessionFacts,
  turn: TurnRecord,
  published: Set<string> | undefined,
): void {
  const { facts } = world;
  const name = `${id}/${turn.turnId}`;
  const outcome = turn.outcome;
  // A send refused at once, or never acknowledged, promised nothing: its sender was told, or retries.
  if (facts.refusedTurns.has(name) || (facts.sentTurns.has(name) && !facts.turns.has(name))) return;
  if (!outcome) {
    const where =
      turn.turnId === s.record.activeTurnId
        ? `the active turn of a ${s.record.state} session`
        : s.record.turnQueue.includes(turn.turnId)
          ? `queued behind ${s.record.activeTurnId}`
          : 'in no queue';
    // A turn item written by an intake that never acknowledged its ticket (it died, or the ticket
    // went to the DLQ) promised nothing; status lists it as `accepting`, not queued.
    if (where === 'in no queue' && !facts.turns.has(name)) return;
    // An accepted turn that no queue holds will never run.
    if (where === 'in no queue') facts.violate('status-agrees', `${name} has no outcome at rest: ${where}`);
    else facts.violate('turn-settled', `${name} has no outcome at rest: ${where}`);
    return;
  }
  facts.verified.add(name);
  const journaled = (s.entries ?? []).filter((e) => e.kind === 'outcome' && e.turnId === turn.turnId);
  if (journaled.length > 1) facts.violate('one-outcome', `${name}: ${journaled.length} outcome entries in the journal`);
  for (const entry of journaled)
    if (entry.kind === 'outcome' && entry.data.status !== outcome.status)
      facts.violate('one-outcome', `${name}: journal says ${entry.data.status}, the turn says ${outcome.status}`);
  if (outcome.error && INJECTED_TEXT.test(outcome.error))
    facts.violate(
      'faults-never-fail-turns',
      `${name} failed on an infrastructure fault: ${outcome.error.slice(0, 160)}`,
    );
  if (outcome.error?.includes('stored state failed validation'))
    facts.violate('journal-intact', `${name} failed: ${outcome.error.slice(0, 160)}`);
  if (!published || published.size === 0)
    facts.violate('turn-published', `${name} ended ${outcome.status} but no result was published`);
  else if (!published.has(outcome.status) || published.size > 1)
    facts.violate('one-outcome', `${name} ended ${outcome.status}; results said ${[...published].join(', ')}`);
}

/** Is this turn's outcome a stop's (its journal entry says `stopped`, or the turn the stop's reason)? */
function stoppedTurn(s: SessionFacts, turn: TurnRecord): boolean {
  const journaled = (s.entries ?? []).some(
    (e) => e.kind === 'outcome' && e.turnId === turn.turnId && e.data.stopped === true,
  );
  return journaled || (turn.outcome?.status === 'cancelled' && turn.outcome.error === TURN_STOPPED);
}

/**
 * Stops of one turn: a stop ends only the turn it names (never one nobody stopped, nor one it
 * found ended), the stopped turn gets one outcome, and it never ends a conversation — only a
 * cancel of the session does.
 */
function checkStops(world: World, sessions: Map<string, SessionFacts>): void {
  const { facts } = world;
  for (const [id, s] of sessions) {
    let stopsHere = false;
    for (const turn of s.turns) {
      const name = `${id}/${turn.turnId}`;
      const stop = facts.stops.get(name);
      if (stop) stopsHere = true;
      if (!stoppedTurn(s, turn)) {
        if (stop?.answers.includes('requested') && !turn.outcome && !s.record.turnQueue.includes(turn.turnId))
          facts.violate('stop-settles', `${name}: a stop was requested and the turn has no outcome at rest`);
        continue;
      }
      if (!stop) facts.violate('stop-names-its-turn', `${name} ended stopped, and no stop named it`);
      else if (stop.answers.length === stop.asked && stop.answers.every((a) => a === 'already-ended'))
        facts.violate('stop-names-its-turn', `${name}: every stop of it answered already-ended, yet it ended stopped`);
      if (turn.outcome && turn.outcome.status !== 'cancelled')
        facts.violate('stop-settles', `${name}: stopped in the journal, ${turn.outcome.status} on the turn`);
    }
    // A stop alone never ends a conversation: cancelled with no cancel requested means one did.
    if (stopsHere && s.record.conversation && s.record.state === 'cancelled' && !s.record.cancelRequested)
      facts.violate('stop-keeps-conversation', `${id}: a conversation ended cancelled with no cancel requested`);
  }
}

/** DESIGN 13: every item expires (no turn, entry or snapshot outlives its session's retention). */
function checkExpiry(world: World, id: string, s: SessionFacts): void {
  const missing = world.memory
    .sortKeys(s.record.key)
    .filter((sk) => typeof world.memory.rawItem(s.record.key, sk)?.ttl !== 'number');
  if (missing.length > 0)
    world.facts.violate('items-expire', `${id}: items without an expiry: ${missing.slice(0, 4).join(', ')}`);
}

/**
 * Once-only effects: each key executed at most once, never refused, always watermarked first,
 * and known to its journal (a result, or a reconcile that found it done) once the world is at
 * rest; an effect behind an approval ran only with an approval of exactly that input.
 */
function checkEffects(world: World, sessions: Map<string, SessionFacts>): void {
  const { facts, services } = world;
  // A run whose session expired whole was checked before its items went (checkpoint).
  const executions = services.executions.filter((e, i) => !facts.beforeExpiry(e.sessionId, i, 'executions'));
  const counts = new Map<string, number>();
  for (const e of executions) counts.set(e.key, (counts.get(e.key) ?? 0) + 1);
  for (const [key, n] of counts) if (n > 1) facts.violate('once-only-once', `${key} executed ${n} times`);
  for (const r of services.refused.filter((x) => !x.stale))
    facts.violate('once-only-never-refused', `${r.key}: the downstream refused a call whose key reconcile voided`);
  for (const e of executions) {
    const agent = e.key.split(':')[1];
    if (agent === 'support-desk' || agent === 'pay-desk') {
      const approved = facts.approvals.some(
        (a) => a.sessionId === e.sessionId && a.callId === e.callId && a.approved && a.digest === inputDigest(e.input),
      );
      if (!approved)
        facts.violate(
          'approval-names-what-runs',
          `${e.key} ran with ${JSON.stringify(e.input)}, which no human approved for call ${e.callId}`,
        );
    }
    const s = sessions.get(e.sessionId);
    if (!s || s.entries === undefined) continue;
    const intent = s.entries.find((x) => x.kind === 'intent' && x.data.idempotencyKey === e.key);
    if (intent?.kind !== 'intent') {
      facts.violate('watermark-first', `${e.key} executed without an intent entry`);
      continue;
    }
    const callId = intent.data.callId;
    const known = s.entries.some(
      (x) =>
        x.seq > intent.seq &&
        ((x.kind === 'tool' && x.data.callId === callId && x.data.ok) ||
          (x.kind === 'reconciled' && x.data.callId === callId && x.data.verdict === 'done')),
    );
    // A parked call (verdict unknown) whose turn an operator then ended without completing it
    // is recorded as what it is: it may have run, and the journal and the transcript say so.
    const parkedThenEnded =
      s.entries.some(
        (x) =>
          x.seq > intent.seq && x.kind === 'reconciled' && x.data.callId === callId && x.data.verdict === 'unknown',
      ) && s.entries.some((x) => x.seq > intent.seq && x.kind === 'outcome' && x.data.status !== 'completed');
    if (!known && !parkedThenEnded)
      facts.violate(
        'effect-recorded',
        `${e.key} executed, but its turn ${intent.turnId} ended without a result or a reconcile for it`,
      );
  }
}

/**
 * At a quiet moment before an idle gap: everything must already be settled. Afterwards the
 * finished sessions whose items expire are retired (their turns were seen to end well).
 */
export async function checkpoint(world: World): Promise<void> {
  await world.sim.outside(async () => {
    const sessions = await readWorld(world);
    await checkQuiet(world, sessions);
    world.pendingRetirement = [...sessions.values()].map((s) => ({
      key: s.record.key,
      terminal: s.terminal,
      items: world.memory.sortKeys(s.record.key).length,
    }));
  });
}

/** After an idle gap's expiry: the finished sessions that lost items (or all of them) are retired. */
export function retireExpired(world: World): void {
  for (const before of world.pendingRetirement) {
    const keys = world.memory.sortKeys(before.key);
    const left = keys.length;
    // A live session that lost items stays checked: that is what the gap is for. One whose record
    // expired is over: a ticket sent again starts a new run (or is refused while remnants stay).
    if (!keys.includes(META_SK))
      world.facts.forgetRun(before.key.id, {
        executions: world.services.executions.length,
        results: world.results.published.length,
      });
    else if (before.terminal && left !== before.items) world.facts.retired.add(before.key.id);
  }
  world.pendingRetirement = [];
}

/** At the end of the drain: the checks of a quiet world, plus liveness — nothing left undone. */
export async function finalCheck(world: World): Promise<void> {
  await world.sim.outside(async () => {
    const sessions = await readWorld(world);
    await checkQuiet(world, sessions);
    const { facts } = world;
    for (const [id, s] of sessions) {
      const r = s.record;
      if (r.sweepAt !== undefined)
        facts.violate('settles', `${id}: still due (sweepAt) after the drain, state ${r.state}`);
      else if (r.state === 'queued' || r.state === 'running')
        facts.violate('settles', `${id}: ${r.state} with nothing due (no sweepAt, no kick)`);
      else if (!s.terminal && r.pendingVersion > r.seenVersion)
        facts.violate(
          'settles',
          `${id}: ${r.state} with unseen events (pendingVersion ${r.pendingVersion} > ${r.seenVersion}) and nothing due`,
        );
      // Fair sharing: every session that waited on a tenant limit ran or was cancelled, and no
      // turn failed because of one.
      if (!s.terminal && s.view?.limited)
        facts.violate('limit-wait-ends', `${id}: still waiting after the drain: ${s.view.limited.reason}`);
      for (const turn of s.turns)
        if (turn.outcome?.error && /tenant slot|rate limit/.test(turn.outcome.error))
          facts.violate('limits-never-fail-turns', `${id}/${turn.turnId} failed: ${turn.outcome.error.slice(0, 160)}`);
      // A stopped conversation takes its next turn: at rest it is idle, unless cancelled or released.
      const stopped = [...facts.stops.keys()].some((name) => name.startsWith(`${id}/`));
      if (stopped && r.conversation && !r.cancelRequested && !r.releaseRequested && r.state !== 'idle')
        facts.violate('stop-keeps-conversation', `${id}: stopped, not cancelled, and ${r.state} at rest`);
      if (r.cancelRequested && !s.terminal)
        facts.violate('cancel-carried-out', `${id}: cancelRequested, yet ${r.state} with nothing due`);
      // A session that ended (a cancel cascades to its tasks as a release would) has no holder left
      // to journal a release; the client then reports on its tasks (confirmReleases asks it).
      if (r.releaseRequested && !s.terminal && !s.entries?.some((e) => e.kind === 'released'))
        facts.violate('release-carried-out', `${id}: a release was asked for and never carried out (state ${r.state})`);
    }
    for (const actor of world.sim.liveActors())
      if (actor.kind !== 'sweeper')
        facts.violate('settles', `${actor.name} never finished (${actor.gates} gates, ${actor.timers} timers waiting)`);
  });
}
