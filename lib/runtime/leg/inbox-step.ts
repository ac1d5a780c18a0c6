import { LeaseLostError } from '../../core/errors.ts';
import type { SessionKey } from '../../core/ids.ts';
import { type InboxItem, TURN_STOPPED, triageInbox } from '../../core/inbox.ts';
import { mustReadRecord } from '../../core/lease.ts';
import { RUNTIME_DEFAULTS } from '../../core/resources.ts';
import type { SessionRecord } from '../../ports/session-store.ts';
import type { RuntimeDeps } from '../deps.ts';
import type { LegContext } from './leg-context.ts';
import type { LegSignals } from './leg-signals.ts';

/**
 * The inbox step, at every step boundary: look at the session record, journal what the inbox
 * holds for this turn — messages before the next model call, human decisions, operator verdicts,
 * a steer or a stop that ends it — each once, then take them off. The look reads the record (one
 * consistent read, no write when nothing waits) only when the one in hand is older than
 * `inboxLookMs` or the heartbeat is behind (`mustReadRecord`); otherwise it takes the record the
 * acquire, the last renewal (which returns the whole record) or the last read brought. Steps faster than that share one read, instead of a
 * read per step next to the step's one write. `inHand` always takes the record in hand: the leg's
 * first boundary comes right after its acquire returned it. A read that went out beside the
 * step's journal write (`lookBesideWrite`) is taken first: the boundary then waits for no read.
 */
export async function deliverInbox(leg: LegContext, inHand = false): Promise<void> {
  const { signals, deps } = leg;
  const ahead = await signals.takeLookAhead();
  if (ahead) {
    assertStillOurs(leg, ahead.record);
    signals.observe(ahead.record, ahead.sentAt);
  }
  const now = deps.clock.now();
  const hand = recordInHand(leg, now);
  // A look beside the write before this boundary is this boundary's look, however long the write
  // took (it is part of the step in flight): only a heartbeat that fell behind reads again.
  const read = !inHand && mustReadRecord(ahead ? { ...hand, readAt: now } : hand);
  const record = read ? await deps.store.getSession(leg.key) : signals.record;
  assertStillOurs(leg, record);
  if (read) signals.observe(record, now);
  if (record.inbox.length === 0) return;
  const { deliver, discard } = triageInbox(leg.journal.view, record.inbox, record);
  if (deliver.length === 0 && discard.length === 0) return;
  for (const item of deliver) await journalItem(leg, item);
  for (const item of discard)
    leg.log.warn('inbox item answers nothing that waits; dropped', {
      id: item.id,
      kind: item.kind,
      ...('callId' in item ? { callId: item.callId } : {}),
    });
  const taken = [...deliver, ...discard].map((item) => ({ id: item.id, index: record.inbox.indexOf(item) }));
  await leg.deps.store.takeInbox(leg.key, { owner: leg.owner, epoch: leg.signals.epoch, taken });
}

async function journalItem(leg: LegContext, item: InboxItem): Promise<void> {
  switch (item.kind) {
    case 'message':
      await leg.journal.append('message', { text: item.text, id: item.id });
      leg.deps.telemetry.metrics.count('MessagesDelivered');
      return;
    case 'decision': {
      // Triage delivered it because it names an awaited call: the entry names that call too.
      const { kind: _kind, ...decision } = item;
      await leg.journal.append('decision', decision);
      return;
    }
    case 'steer':
      // The turn winds down here, its partial work kept; the steering turn heads the queue.
      await leg.journal.append('outcome', { status: 'superseded', error: `superseded by turn ${item.turnId}` });
      leg.log.info('turn superseded by a steering turn', { by: item.turnId });
      return;
    case 'stop':
      // This turn alone ends, its partial work kept; the conversation goes on (exits.ts).
      await leg.journal.append('outcome', { status: 'cancelled', error: TURN_STOPPED, stopped: true });
      leg.log.info('turn stopped by request', { id: item.id });
      return;
    case 'resolve':
      await leg.journal.append('reconciled', {
        callId: item.callId,
        verdict: item.done ? 'done' : 'notDone',
        ...(item.done ? { output: item.output ?? null } : {}),
        id: item.id,
      });
      return;
  }
}

/**
 * Sends the read the next step boundary would make, beside a journal write that takes `writeMs`
 * or so: due when the record in hand will be `inboxLookMs` old by the time the write returns. The
 * boundary then takes it (deliverInbox) instead of waiting for a read of its own after the
 * write; the record it brings is as fresh as that read's would be, give or take the write, so a
 * message injected meanwhile reaches the turn as soon. None when every boundary reads anyway (an
 * interval of 0), or the heartbeat is behind (the boundary reads then, to check the lease), or a
 * look is in flight already.
 */
export function lookBesideWrite(key: SessionKey, deps: RuntimeDeps, signals: LegSignals, writeMs: number): void {
  const { config } = deps;
  const lookMs = config.inboxLookMs ?? RUNTIME_DEFAULTS.inboxLookMs;
  if (lookMs <= 0 || signals.lookingAhead) return;
  const now = deps.clock.now();
  const returns = now + writeMs;
  if (returns - signals.recordReadAt < lookMs || signals.leaseUntil - returns < config.leaseTtlMs / 2) return;
  signals.lookAhead(now, deps.store.getSession(key));
}

/** A record read at a boundary must still be this leg's lease: another owner's epoch stops the leg. */
function assertStillOurs(leg: LegContext, record: SessionRecord | undefined): asserts record is SessionRecord {
  const { signals } = leg;
  if (!record || record.owner !== leg.owner || record.epoch !== signals.epoch) {
    throw new LeaseLostError(`session record moved to epoch ${record?.epoch} under epoch ${signals.epoch}`, record);
  }
}

function recordInHand(leg: LegContext, now: number) {
  const { config } = leg.deps;
  return {
    now,
    readAt: leg.signals.recordReadAt,
    leaseUntil: leg.signals.leaseUntil,
    leaseTtlMs: config.leaseTtlMs,
    lookMs: config.inboxLookMs ?? RUNTIME_DEFAULTS.inboxLookMs,
  };
}
