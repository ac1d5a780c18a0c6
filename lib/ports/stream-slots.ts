import type { StreamAdmission } from '../core/stream-slots.ts';

/**
 * A slot per open event stream, per caller, readable from every invocation of the API: one
 * Lambda container counting its own requests would bound only itself.
 */
export interface StreamSlotStore {
  /**
   * Opens slot `id` for `holder` until `until` (epoch ms) unless the holder has `limit` unexpired
   * slots; the refusal says how many and when one lapses.
   */
  open(
    holder: string,
    slot: { readonly id: string; readonly until: number; readonly now: number; readonly limit: number },
  ): Promise<StreamAdmission>;
  /** Frees the slot; a slot already gone (lapsed, or closed before) is no error. */
  close(holder: string, id: string): Promise<void>;
}
