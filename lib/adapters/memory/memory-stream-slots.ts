import { admitStream, type StreamAdmission, type StreamSlots } from '../../core/stream-slots.ts';
import type { StreamSlotStore } from '../../ports/stream-slots.ts';

/** The in-memory twin of the stream slot store (unit tests); passes the same contract. */
export class MemoryStreamSlots implements StreamSlotStore {
  readonly #byHolder = new Map<string, StreamSlots>();

  async open(
    holder: string,
    slot: { readonly id: string; readonly until: number; readonly now: number; readonly limit: number },
  ): Promise<StreamAdmission> {
    const admission = admitStream(this.#byHolder.get(holder) ?? {}, slot);
    if (admission.admitted) this.#byHolder.set(holder, admission.slots);
    return admission;
  }

  async close(holder: string, id: string): Promise<void> {
    const { [id]: _closed, ...rest } = this.#byHolder.get(holder) ?? {};
    this.#byHolder.set(holder, rest);
  }
}
