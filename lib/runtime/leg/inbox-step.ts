import { LeaseLostError } from '../../core/errors.ts';
import { type InboxItem, triageInbox } from '../../core/inbox.ts';
import type { LegContext } from './leg-context.ts';

/**
 * The inbox step, at every step boundary: read the session record (one consistent read, no
 * write when nothing waits), journal what the inbox holds for this turn — messages before the
 * next model call, human decisions, operator verdicts — each once, then take them off.
 * `inHand` uses the record the leg already holds instead of reading it: the leg's first boundary
 * comes right after its acquire returned the record, so a read there would only add a request.
 */
export async function deliverInbox(leg: LegContext, inHand = false): Promise<void> {
  const record = inHand ? leg.signals.record : await leg.deps.store.getSession(leg.key);
  if (!record || record.owner !== leg.owner || record.epoch !== leg.signals.epoch) {
    throw new LeaseLostError(`session record moved to epoch ${record?.epoch} under epoch ${leg.signals.epoch}`, record);
  }
  leg.signals.observe(record);
  if (record.inbox.length === 0) return;
  const { deliver, discard } = triageInbox(leg.journal.view, record.inbox);
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
