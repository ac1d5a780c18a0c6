import { randomUUID } from 'node:crypto';
import { streamRefusal } from '../core/stream-slots.ts';
import { ApiError } from './api-errors.ts';
import { granteeOf } from './caller.ts';
import type { RouteContext } from './route.ts';

/**
 * A slot lapses this long after the wait it was taken for ends, whether or not it was closed: room
 * for the reads after the wait. An events request's 20 s of wait plus this is the API's 30 s
 * timeout, so no invocation outlives its slot.
 */
const SLOT_MARGIN_MS = 10_000;

/**
 * Takes one of the caller's stream slots for a request that waits or streams up to `holdMs`; the
 * slots are shared by every invocation of the API, so one caller cannot hold more than its bound
 * of them whichever containers serve it. A refusal is a plain 429 `too_many_streams`. Returns what
 * frees the slot.
 */
export async function openStreamSlot(
  context: RouteContext<unknown, unknown, unknown>,
  holdMs: number,
): Promise<() => Promise<void>> {
  const { services } = context;
  const holder = granteeOf(context.caller);
  const now = services.clock.now();
  const id = randomUUID();
  const admission = await services.streams.open(holder, {
    id,
    until: now + holdMs + SLOT_MARGIN_MS,
    now,
    limit: services.streamsPerCaller,
  });
  if (!admission.admitted) throw new ApiError('too_many_streams', streamRefusal(holder, admission, now));
  return () => services.streams.close(holder, id);
}
