import { LeaseLostError } from '../../core/errors.ts';
import { type InboxItem, TURN_STOPPED, triageInbox } from '../../core/inbox.ts';
import { mustReadRecord } from '../../core/lease.ts';
import { RUNTIME_DEFAULTS } from '../../core/resources.ts';
import type { LegContext } from './leg-context.ts';

/**
 * The inbox step, at every step boundary: look at the session record, journal what the inbox
 * holds for this turn — messages before the next model call, human decisions, operator verdicts,
 * a steer or a stop that ends it — each once, then take them off. The look reads the record (one
 * consistent read, no write when nothing waits) only when the one in hand is older than
 * `inboxLookMs` or the heartbeat is behind (`mustReadRecord`); otherwise it takes the record the
 * acquire, the last renewal (which returns the whole record) or the last read brought. Steps faster than that share one read, instead of a
 * read per step next to the step's one write. `inHand` always takes the record in hand: the leg's
 * first boundary comes right after its acquire returned it.
 */
export async function deliverInbox(leg: LegContext, inHand = false): Promise<void> {
  const { signals, deps } = leg;
  const now = deps.clock.now();
  const read = !inHand && mustReadRecord(recordInHand(leg, now));
  const record = read ? await deps.store.getSession(leg.key) : signals.record;
  if (!record || record.owner !== leg.owner || record.epoch !== signals.epoch) {
    throw new LeaseLostError(`session record moved to epoch ${record?.epoch} under epoch ${signals.epoch}`, record);
  }
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
