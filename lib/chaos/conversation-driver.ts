import { type BatonClient, SendMode } from '../client/baton-client.ts';
import { systemClock } from '../ports/clock.ts';
import type { ConversationLog, SubmittedTicket } from './chaos-snapshot.ts';

/** The support-desk agent (examples/support-desk): turns, injected messages, an approved refund. */
export const CONVERSATION_AGENT = 'support-desk';
const POLL_MS = 250;
/** Steps of the `work` turn (half a second each): long enough for a message to land inside it. */
const WORK_STEPS = 4;

export interface ConversationDriverDeps {
  readonly client: BatonClient;
  /** Ticket (turn) ids whose result the results queue carried. */
  readonly finished: ReadonlySet<string>;
  /** True once the run stops waiting (deadline, abort). */
  readonly stopped: () => boolean;
  readonly log: (line: string) => void;
}

/**
 * Drives one conversation after its first turn (the ticket) from outside, as a client would: sends
 * `work <k>`, injects a message while it runs, queues `refund O-<n>` behind it and approves the
 * refund when it asks. Records what it sent on `ticket.conversation` for the checker; what it
 * could not send stays listed as unsent (the checker counts it lost).
 */
export async function driveConversation(ticket: SubmittedTicket, n: number, deps: ConversationDriverDeps) {
  const log = ticket.conversation as ConversationLog;
  const workId = `${ticket.ticketId}-work`;
  const noteId = `${ticket.ticketId}-note`;
  const refundId = `${ticket.ticketId}-refund`;
  log.unsent.push(workId, noteId, refundId);
  const sent = (id: string) => log.unsent.splice(log.unsent.indexOf(id), 1);
  const { client, finished } = deps;
  try {
    // The session exists once intake ran the first turn.
    if (!(await until(() => finished.has(ticket.ticketId), deps))) return;
    await client.send(ticket.sessionId, { text: `work ${WORK_STEPS}` }, { id: workId });
    log.turns.push(workId);
    sent(workId);
    const running = await until(async () => {
      const status = await client.status(ticket.sessionId);
      return finished.has(workId) || (status?.activeTurnId === workId && status.status === 'running');
    }, deps);
    if (!running) return;
    const note = await client.send(
      ticket.sessionId,
      { text: 'customer is VIP' },
      { id: noteId, mode: SendMode.inject },
    );
    // The turn may have ended between the look and the send: the message is then a turn of its own.
    (note.mode === SendMode.inject ? log.injected : log.turns).push(noteId);
    sent(noteId);
    await client.send(ticket.sessionId, { text: `refund O-${n}` }, { id: refundId });
    log.turns.push(refundId);
    log.refundTurnId = refundId;
    sent(refundId);
    // Approve from outside whenever the refund waits; a decision posted twice is one decision.
    await until(async () => {
      if (finished.has(refundId)) return true;
      const status = await client.status(ticket.sessionId);
      const pending = status?.pendingApprovals?.find((a) => a.tool === 'issueRefund');
      // Answered between the look and the approve: it throws, and the next look sees it answered.
      // The whole identity it read is what it approves: the call and the input it saw.
      if (pending) await client.approve(ticket.sessionId, pending, { approved: true });
      return false;
    }, deps);
  } catch (error) {
    deps.log(`conversation ${ticket.ticketId}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Polls until the probe holds (a failed look is looked again); false when the run stopped first. */
async function until(probe: () => boolean | Promise<boolean>, deps: ConversationDriverDeps): Promise<boolean> {
  for (;;) {
    if (
      await Promise.resolve()
        .then(probe)
        .catch(() => false)
    )
      return true;
    if (deps.stopped()) return false;
    await systemClock.sleep(POLL_MS);
  }
}
