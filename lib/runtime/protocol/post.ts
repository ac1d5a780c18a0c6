import { MAX_CLOCK_SKEW_MS } from '../../core/budget.ts';
import type { SessionKey } from '../../core/ids.ts';
import type { InboxItem } from '../../core/inbox.ts';
import { childContext } from '../../core/trace-context.ts';
import type { KickReason } from '../../core/vocabulary.ts';
import type { Clock } from '../../ports/clock.ts';
import type { WorkQueue } from '../../ports/queues.ts';
import type { SessionRecord, SessionStore } from '../../ports/session-store.ts';
import type { RuntimeDeps } from '../deps.ts';

/**
 * `post(event)`: how any process tells a session something happened — a cancel, a release, a
 * message or a human's answer (inbox), a child's outcome. One conditional write stores the event
 * and bumps pendingVersion (and keeps the sweeper watching), then one kick wakes whoever should
 * act: a free lease is taken for it. A holder needs no kick (none is sent while its lease is
 * fresh): it meets the bump at its next renewal or boundary, and cannot leave the session without seeing it (every exit out of
 * `queued` is fenced on pendingVersion). Turns are posted by acceptTurn (turn-intake.ts), which
 * queues them the same way.
 */
export type SessionEvent =
  | { readonly kind: 'cancel' }
  /** Cancel the session's running tasks and wait for them up to `timeoutMs` (the first mark stands). */
  | { readonly kind: 'release'; readonly timeoutMs: number }
  | { readonly kind: 'inbox'; readonly item: InboxItem; readonly maxPending: number }
  /** A child's outcome: its parent, when it waits for its tasks, looks again at once. */
  | { readonly kind: 'child-outcome' }
  /** A tenant slot was handed to the session, which waits for one (fair sharing): it goes on at once. */
  | { readonly kind: 'slot-granted' };

export interface PostDeps {
  readonly store: Pick<SessionStore, 'bump' | 'postInbox'>;
  readonly workQueue: WorkQueue;
  readonly clock: Clock;
  /** When the sweeper looks should the kick be lost. */
  readonly sweepGraceMs: number;
}

export type Posted =
  | { readonly ok: true; readonly record: SessionRecord; readonly posted: boolean }
  | {
      readonly ok: false;
      readonly reason: 'not-found' | 'finished' | 'full';
      readonly current?: SessionRecord | undefined;
    };

/** The runtime's own posts (a cascade cancel, a child's outcome) wait the configured sweep grace. */
export const postDepsOf = (deps: RuntimeDeps): PostDeps => ({ ...deps, sweepGraceMs: deps.config.sweepGraceMs });

const KICK_REASON: Record<SessionEvent['kind'], KickReason> = {
  cancel: 'cancel',
  release: 'wake',
  inbox: 'wake',
  'child-outcome': 'wake',
  'slot-granted': 'wake',
};

/**
 * How long a lease must still run, past the bump, for the post to leave its holder to find it.
 * A kick that finds a fresh lease is dropped anyway; this covers the kick's trip and the skew
 * between the poster's clock and the holder's.
 */
const HELD_LEASE_MARGIN_MS = 2 * MAX_CLOCK_SKEW_MS;

/**
 * Posts an event to a session: stored and bumped in one write, then a kick on the session's
 * trace — unless the write shows a lease that will still be held when the kick arrives. That
 * kick would be dropped (the holder meets the bump at its next look or renewal, and cannot
 * leave without it); sending it costs a queue request, an invocation and a record read. Should
 * the holder die meanwhile, the bump's sweepAt has the sweeper recover the session.
 */
export async function post(deps: PostDeps, key: SessionKey, event: SessionEvent): Promise<Posted> {
  const stored = await store(deps, key, event);
  if (!stored.ok) return stored;
  const { owner, until } = stored.record;
  if (owner !== undefined && until !== undefined && until - deps.clock.now() > HELD_LEASE_MARGIN_MS) return stored;
  await deps.workQueue.sendKick(
    { v: 1, session: key, reason: KICK_REASON[event.kind] },
    { trace: childContext(stored.record.traceId) },
  );
  return stored;
}

async function store(deps: PostDeps, key: SessionKey, event: SessionEvent): Promise<Posted> {
  const now = deps.clock.now();
  const sweepAt = now + deps.sweepGraceMs;
  switch (event.kind) {
    case 'inbox':
      return deps.store.postInbox(key, { item: event.item, now, sweepAt, maxPending: event.maxPending });
    case 'cancel':
      return bumped(await deps.store.bump(key, { now, sweepAt, cancel: true }));
    case 'release':
      return bumped(await deps.store.bump(key, { now, sweepAt, release: { timeoutMs: event.timeoutMs } }));
    case 'child-outcome':
    case 'slot-granted':
      // A parent waiting on its tasks (a session waiting for a slot) has its wait's deadline (its
      // recheck) as sweepAt: bring it forward, so a lost wake-up kick costs a sweep, not the rest of the wait.
      return bumped(await deps.store.bump(key, { now, sweepAt, sweepSoon: true }));
  }
}

const bumped = (result: Awaited<ReturnType<SessionStore['bump']>>): Posted =>
  result.ok ? { ok: true, record: result.record, posted: true } : result;
