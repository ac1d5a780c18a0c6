import { NotFoundError } from '../core/errors.ts';
import type { EntryDataOf } from '../core/journal.ts';
import type { OutcomeStatus } from '../core/vocabulary.ts';
import { type Clock, systemClock } from '../ports/clock.ts';
import { ApiCallError } from './http-baton-client.ts';
import type { BatonTransport, FollowEvent } from './transport.ts';

/** A turn's ending as a waiter sees it: its outcome entry, and where it was. */
export interface TurnEnding {
  readonly sessionId: string;
  readonly turnId: string;
  readonly status: OutcomeStatus;
  readonly output?: unknown;
  readonly error?: string | undefined;
}

export interface AwaitTurnOptions {
  /** Stops the wait: it then rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
  /**
   * How long to wait for the session or the turn to appear at all (a submitted ticket is a
   * session only once intake has run). Default 60 s; the wait for the outcome itself is unbounded.
   */
  readonly appearWithinMs?: number | undefined;
  /** Each entry of the turn as it is journaled, and with `live` its streaming model text. */
  readonly onEvent?: ((event: FollowEvent) => void) | undefined;
  /** Pass partial model text to `onEvent` while a response streams. */
  readonly live?: boolean | undefined;
  /** Time for the pauses between tries (tests pass a manual one). */
  readonly clock?: Clock | undefined;
}

/** How long a submitted turn may take to appear before the wait says it never arrived. */
export const DEFAULT_APPEAR_WITHIN_MS = 60_000;
/** The pause before looking again for a session or turn that is not there yet. */
const APPEAR_POLL_MS = 250;

/** Is this the answer for a session or turn that does not exist (yet), from either transport? */
const notThereYet = (error: unknown): boolean =>
  error instanceof NotFoundError || (error instanceof ApiCallError && error.code === 'not_found');

/**
 * Follows one turn's stream until its outcome entry and answers it. A turn not there yet (its
 * ticket still queued for intake) is looked for again until `appearWithinMs`; a stream that ends
 * without the outcome (a follow request that came back empty-handed) is resumed from its cursor.
 * Works the same over the store-backed and the HTTP client.
 */
export async function awaitTurnOutcome(
  transport: BatonTransport,
  sessionId: string,
  turnId: string,
  options: AwaitTurnOptions = {},
): Promise<TurnEnding> {
  const clock = options.clock ?? systemClock;
  const appearBy = clock.now() + (options.appearWithinMs ?? DEFAULT_APPEAR_WITHIN_MS);
  let after = 0;
  let seen = false;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      // Live text comes only when asked for: every event is a FollowEvent either way.
      const stream: AsyncIterable<FollowEvent> = transport.events(sessionId, {
        turnId,
        after,
        follow: true,
        live: options.live === true,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      for await (const event of stream) {
        seen = true;
        options.onEvent?.(event);
        if (event.kind === 'model-text') continue;
        after = event.cursor;
        if (event.kind === 'outcome') {
          const data = event.data as EntryDataOf<'outcome'>;
          return {
            sessionId,
            turnId,
            status: data.status,
            ...(data.output === undefined ? {} : { output: data.output }),
            ...(data.error === undefined ? {} : { error: data.error }),
          };
        }
      }
    } catch (error) {
      if (!notThereYet(error) || seen) throw error;
      if (clock.now() > appearBy)
        throw new NotFoundError(
          `turn ${turnId} of session ${sessionId} did not appear within ${options.appearWithinMs ?? DEFAULT_APPEAR_WITHIN_MS} ms: was its ticket refused or dead-lettered? (${(error as Error).message})`,
          { cause: error },
        );
    }
    options.signal?.throwIfAborted();
    await clock.sleep(APPEAR_POLL_MS, options.signal);
  }
}
