import type { BatonClient } from '../../lib/client/baton-client.ts';
import { InvalidInputError, TurnRefusedError } from '../../lib/core/errors.ts';
import { foldJournal, pendingCallKey } from '../../lib/core/fold.ts';
import type { SessionKey } from '../../lib/core/ids.ts';
import type { Ticket } from '../../lib/core/messages.ts';
import { TERMINAL_SESSION_STATES } from '../../lib/core/vocabulary.ts';
import type { SessionStore } from '../../lib/ports/session-store.ts';
import type { Facts } from './facts.ts';
import { isInjected } from './faults.ts';
import type { Command, StopPick } from './plan.ts';
import type { SimTicketQueue } from './queues.ts';
import type { Rng } from './rng.ts';
import { type Downstream, inputDigest, refundIdOf } from './services.ts';

/**
 * What a user's command does, run as a client process of its own. A promise is recorded in the
 * facts only after the call that made it returned: a client that died first was promised nothing.
 */

export interface ClientContext {
  readonly client: BatonClient;
  readonly tickets: SimTicketQueue;
  /** The gated store, for what a client reads besides the client's verbs (a journal to find a parked call's key). */
  readonly store: SessionStore;
  readonly facts: Facts;
  readonly services: Downstream;
  readonly rng: Rng;
}

export async function runCommand(ctx: ClientContext, command: Exclude<Command, { kind: 'idle-gap' }>): Promise<void> {
  const { client, facts } = ctx;
  const session = command.session;
  const sid = session.key.id;
  try {
    switch (command.kind) {
      case 'submit':
      case 'resubmit':
        await client.submit({ agent: session.agent, input: session.input, ticketId: session.ticketId });
        return;
      case 'ticket-turn':
        // A producer's further turn: the ticket names the session; intake accepts or refuses it.
        await ctx.tickets.submit({
          v: 1,
          ticketId: command.id,
          agent: session.agent,
          sessionId: sid,
          input: command.input as Ticket['input'],
        });
        return;
      case 'send': {
        facts.sentTurns.add(`${sid}/${command.id}`);
        const sent = await client.send(sid, command.input, { id: command.id, mode: command.mode });
        if (sent.mode !== 'inject') facts.acceptTurn(session.key, sent.turnId, `send/${sent.mode}`);
        return;
      }
      case 'stop-turn': {
        const turnId = await pickTurn(ctx, session.key, command.pick);
        if (turnId === undefined) return;
        const id = `${sid}/${turnId}`;
        facts.askStop(id);
        facts.answerStop(id, await client.stopTurn(sid, turnId));
        return;
      }
      case 'cancel': {
        const before = command.statusFirst ? await client.status(sid) : undefined;
        const answer = await client.cancel(sid);
        if (answer === 'requested') facts.cancels.push(session.key);
        if (before && TERMINAL_SESSION_STATES.includes(before.status) && answer === 'requested')
          facts.violate(
            'cancel-agrees-with-status',
            `${sid}: status said ${before.status}, then cancel answered requested (the session was not finished)`,
          );
        return;
      }
      case 'release': {
        const outcome = await client.release(sid, { timeoutS: command.timeoutS, waitMs: command.waitMs });
        facts.releases.push({ key: session.key, released: outcome.released });
        return;
      }
      case 'approve':
        await answerApprovals(ctx, session.key, command.approved);
        return;
      case 'resolve':
        await resolveParked(ctx, session.key);
        return;
    }
  } catch (error) {
    if (error instanceof TurnRefusedError && command.kind === 'send') facts.refusedTurns.add(`${sid}/${command.id}`);
    // Refusals (not found, finished, full, stale, …) are answers; injected faults are the network's.
    if (error instanceof InvalidInputError || isInjected(error)) return;
    throw error;
  }
}

/** The turn a stop names, read from the session now: its running turn, a queued one, or any of its turns. */
async function pickTurn(ctx: ClientContext, key: SessionKey, pick: StopPick): Promise<string | undefined> {
  const record = await ctx.store.getSession(key);
  if (!record) return undefined;
  if (pick === 'queued' && record.turnQueue.length > 0) return ctx.rng.pick(record.turnQueue);
  if (pick !== 'any') return record.activeTurnId;
  const turns = await ctx.store.listTurns(key);
  return turns.length > 0 ? ctx.rng.pick(turns).turnId : undefined;
}

/** A human answers the first approval the session waits for. Returns the question's identity, if any. */
export async function answerApprovals(
  ctx: ClientContext,
  key: SessionKey,
  approved: boolean,
): Promise<string | undefined> {
  const status = await ctx.client.status(key.id);
  const pending = status?.pendingApprovals?.[0];
  if (!pending) return undefined;
  const entries = await ctx.store.readJournal(key);
  const asked = entries.findLast((e) => e.kind === 'approval' && e.data.callId === pending.callId);
  const question = `approval ${key.id} ${pending.callId} @${asked?.seq}`;
  // Recorded before the call: a call whose response is lost may still have landed its decision.
  ctx.facts.approvals.push({ sessionId: key.id, callId: pending.callId, digest: inputDigest(pending.input), approved });
  await ctx.client.approve(key.id, pending.callId, { approved });
  ctx.facts.answered.add(question);
  return question;
}

/**
 * An operator answers a parked once-only call truthfully: they ask the downstream (here, its
 * record of executions) whether the call's current key ran.
 */
export async function resolveParked(ctx: ClientContext, key: SessionKey): Promise<string | undefined> {
  const status = await ctx.client.status(key.id);
  const parked = status?.parked;
  if (!parked) return undefined;
  const view = foldJournal(await ctx.store.readJournal(key));
  const pending = view.pendingCalls.find((p) => p.call.id === parked.callId);
  if (!pending) return undefined;
  const callKey = pendingCallKey(key, pending);
  const question = `parked ${key.id} ${callKey}`;
  const done = ctx.services.executed(callKey);
  await ctx.client.resolve(
    key.id,
    parked.callId,
    done ? { done, output: { refundId: refundIdOf(callKey) } } : { done },
  );
  ctx.facts.answered.add(question);
  return question;
}
