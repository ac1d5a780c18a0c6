import { InvalidInputError } from './errors.ts';
import { foldJournal, type SessionView } from './fold.ts';
import type { JournalEntry, OriginalEffect } from './journal.ts';
import { interruptedOnceOnly } from './next-action.ts';
import { taskLedger } from './tasks.ts';

/**
 * Where a fork may start (lib/core/fork-state.ts has what a fork does afterwards): a new session
 * whose history is another's up to a cursor. Nothing before the cursor runs again, and no
 * once-only call the original made after it is silently repeated: the fork's `forked` entry lists
 * those calls, and the fork's effects decide what a repeat of one does.
 */

/**
 * The once-only calls a journal's entries made: each watermark (`intent`) with the result that
 * closed it (a `tool` result, or a `done` verdict); a `notDone` verdict means it did not happen.
 * A watermark left open, or parked as unknown, is listed without a result.
 */
export function onceOnlyCalls(entries: readonly JournalEntry[]): OriginalEffect[] {
  const calls: OriginalEffect[] = [];
  const voided = new Set<number>();
  const open = new Map<string, number>();
  for (const entry of entries) {
    if (entry.kind === 'model') open.clear();
    else if (entry.kind === 'intent') {
      open.set(entry.data.callId, calls.length);
      calls.push({
        seq: entry.seq,
        tool: entry.data.tool,
        idempotencyKey: entry.data.idempotencyKey,
        ...(entry.data.digest === undefined ? {} : { digest: entry.data.digest }),
      });
    } else if (entry.kind === 'tool' || entry.kind === 'reconciled') {
      const at = open.get(entry.data.callId);
      if (at === undefined) continue;
      open.delete(entry.data.callId);
      const call = calls[at]!;
      if (entry.kind === 'tool') {
        const { ok, output, error } = entry.data;
        calls[at] = {
          ...call,
          result: { ok, ...(output === undefined ? {} : { output }), ...(error === undefined ? {} : { error }) },
        };
      } else if (entry.data.verdict === 'done')
        calls[at] = {
          ...call,
          result: { ok: true, ...(entry.data.output === undefined ? {} : { output: entry.data.output }) },
        };
      else if (entry.data.verdict === 'notDone') voided.add(at);
    }
  }
  return calls.filter((_, i) => !voided.has(i));
}

/** Where a fork starts, checked: the state at the cursor, the turn it continues, the calls after it. */
export interface ForkPoint {
  /** The fold of the original up to the cursor. */
  readonly view: SessionView;
  /** The turn the fork continues (a fork inside a turn); undefined at a turn boundary. */
  readonly continuesTurn?: string | undefined;
  /** The once-only calls the original made after the cursor. */
  readonly ledger: OriginalEffect[];
}

export interface ForkPointRequest {
  readonly sessionId: string;
  readonly cursor: number;
  /** The fork starts a new turn at the cursor with its own input. */
  readonly withInput: boolean;
  /** The original takes further turns (a one-shot session forks only before its outcome). */
  readonly conversation: boolean;
}

/**
 * Checks a fork point against the original's whole journal and returns what the fork starts
 * from. Throws InvalidInputError naming what is wrong: a cursor that is not a seq, past the end,
 * after a release, splitting a once-only call from its result, a new input inside a turn (or none
 * at a boundary), or a prefix that started background tasks (their children are the original's).
 */
export function planFork(entries: readonly JournalEntry[], request: ForkPointRequest): ForkPoint {
  const { cursor, sessionId } = request;
  const session = `session ${sessionId}`;
  if (!Number.isInteger(cursor) || cursor < 0)
    throw new InvalidInputError(`fork cursor must be a journal seq (an integer of 0 or more), got ${cursor}`);
  const last = entries.at(-1)?.seq ?? 0;
  if (cursor > last)
    throw new InvalidInputError(`fork cursor ${cursor} is past the end of ${session} (last seq ${last})`);
  const prefix = entries.filter((e) => e.seq <= cursor);
  const released = prefix.find((e) => e.kind === 'released');
  if (released)
    throw new InvalidInputError(
      `fork cursor ${cursor} is inside a released ${session} (released at seq ${released.seq}); fork before ${released.seq}`,
    );
  const view = foldJournal(prefix);
  const open = interruptedOnceOnly(view);
  if (open)
    throw new InvalidInputError(
      `fork cursor ${cursor} splits once-only call ${open.call.id} (${open.call.name}) of ${session} from its result: its watermark is at seq ${open.intentSeq}; fork before it or after its result`,
    );
  if (taskLedger(prefix).tasks.length > 0)
    throw new InvalidInputError(
      `${session} started background tasks before seq ${cursor}: a fork would share them with the original; fork before the first task started`,
    );
  const boundary = view.turnId === undefined || view.outcome !== undefined;
  if (request.withInput && !boundary)
    throw new InvalidInputError(
      `fork cursor ${cursor} is inside turn ${view.turnId} of ${session}: a new input needs a turn boundary (the seq of a turn's outcome, or the seq before a turn's input); fork without an input to continue the turn`,
    );
  if (!request.withInput && boundary)
    throw new InvalidInputError(
      `fork cursor ${cursor} is at a turn boundary of ${session}: give the fork its input (--text or --input), or use rerun`,
    );
  if (request.withInput && !request.conversation && view.outcome !== undefined)
    throw new InvalidInputError(
      `${session} takes one turn and it ended at or before seq ${cursor}: fork it before its turn's outcome`,
    );
  return {
    view,
    ...(boundary ? {} : { continuesTurn: view.turnId }),
    ledger: onceOnlyCalls(entries.filter((e) => e.seq > cursor)),
  };
}

/** The cursor and input of `rerun --turn T`: the seq before the turn's input, and that input. */
export function turnStartOf(
  entries: readonly JournalEntry[],
  sessionId: string,
  turnId: string,
): { cursor: number; input: unknown } {
  const start = entries.find((e) => e.kind === 'input' && e.turnId === turnId);
  if (start?.kind !== 'input')
    throw new InvalidInputError(`session ${sessionId} has no turn ${turnId} in its journal (it may not have started)`);
  return { cursor: start.seq - 1, input: start.data.input };
}
