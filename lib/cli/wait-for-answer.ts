import type { BatonTransport, FollowEvent } from '../client/transport.ts';
import { awaitTurnOutcome, type TurnEnding } from '../client/turn-outcome.ts';
import type { EntryDataOf } from '../core/journal.ts';
import type { CommandIo } from './session-commands.ts';

/**
 * How `--wait` exits, by the turn's outcome (README, "Waiting for an answer"). Any other error
 * (refused, unreachable, bad arguments) exits 1 too, with its message on stderr.
 */
export const WAIT_EXIT = {
  completed: 0,
  failed: 1,
  /** Cancelled, superseded by a steered turn: the turn ended without an answer of its own. */
  other: 2,
  /** Stopped waiting (Ctrl-C); the turn goes on. */
  interrupted: 130,
} as const;

export interface WaitOptions {
  /** Stream the turn's text as it is written (partial model text where the stack keeps it). */
  readonly follow: boolean;
}

/**
 * Waits for a turn's outcome and prints its answer: the output's text (or its JSON when it is
 * structured), or `failed: …`/`cancelled` with the reason; with `--json`, one line with all of it.
 * Following, the text is written as it streams and only a structured output is printed after it.
 */
export async function waitForAnswer(
  transport: BatonTransport,
  sessionId: string,
  turnId: string,
  io: CommandIo,
  options: WaitOptions,
): Promise<number> {
  const printer = options.follow && !io.json ? followPrinter(io) : undefined;
  let ending: TurnEnding;
  try {
    ending = await awaitTurnOutcome(transport, sessionId, turnId, {
      live: options.follow,
      ...(printer ? { onEvent: printer.onEvent } : {}),
      ...(io.signal ? { signal: io.signal } : {}),
    });
  } catch (error) {
    if (!io.signal?.aborted) throw error;
    printer?.endLine();
    note(io, `stopped waiting; the turn goes on: baton events ${sessionId} --turn ${turnId} --follow`);
    return WAIT_EXIT.interrupted;
  }
  printer?.endLine();
  if (io.json) io.out(JSON.stringify(ending));
  else if (ending.status === 'completed') {
    const text = typeof ending.output === 'string' ? ending.output : JSON.stringify(ending.output);
    // Following, a text answer was written as it streamed.
    if (!(printer && typeof ending.output === 'string')) io.out(text);
  } else io.out(`${ending.status}${ending.error === undefined ? '' : `: ${ending.error}`}`);
  if (ending.status === 'completed') return WAIT_EXIT.completed;
  return ending.status === 'failed' ? WAIT_EXIT.failed : WAIT_EXIT.other;
}

/** A progress line, kept off stdout so that stdout is the answer alone. */
export const note = (io: CommandIo, line: string): void => (io.note ?? ((l: string) => console.error(l)))(line);

/**
 * Writes a turn's text as it comes: partial model text chunk by chunk where the stack streams it,
 * else each model response's text when its entry is journaled; tool calls as notes.
 */
function followPrinter(io: CommandIo) {
  // Without a raw writer (an embedding program's `out`), the text is gathered into whole lines.
  let line = '';
  const write =
    io.write ??
    ((text: string) => {
      line += text;
    });
  /** Model entries whose text was already written from its chunks. */
  const streamed = new Set<number>();
  let open = false;
  const endLine = () => {
    if (open && io.write) io.write('\n');
    else if (open) io.out(line);
    open = false;
    line = '';
  };
  const onEvent = (event: FollowEvent) => {
    if (event.kind === 'model-text') {
      streamed.add(event.seq);
      if (event.text !== '') open = true;
      write(event.text);
      return;
    }
    if (event.kind === 'model') {
      const data = event.data as EntryDataOf<'model'>;
      if (!streamed.has(event.seq) && data.text) {
        write(data.text);
        open = true;
      }
      endLine();
    } else if (event.kind === 'tool') {
      const data = event.data as EntryDataOf<'tool'>;
      note(io, `· ${data.tool} ${data.ok ? 'ok' : `failed: ${data.error ?? ''}`}`);
    }
  };
  return { onEvent, endLine };
}
