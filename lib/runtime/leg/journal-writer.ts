import {
  BatonError,
  CorruptStateError,
  InfrastructureError,
  LeaseLostError,
  PayloadTooLargeError,
  SeqTakenError,
} from '../../core/errors.ts';
import { applyEntry, EMPTY_VIEW, foldJournal, type SessionView } from '../../core/fold.ts';
import type { SessionKey } from '../../core/ids.ts';
import { assertReadableFormat, type EntryDataOf, type JournalEntry } from '../../core/journal.ts';
import { formatTraceparent, type TraceContext } from '../../core/trace-context.ts';
import type { EntryKind, KickReason } from '../../core/vocabulary.ts';
import { itemTtlSeconds, journalFormatOf, type RuntimeDeps, type RuntimeLogger } from '../deps.ts';
import type { LegSignals } from './leg-signals.ts';

/** How many times a new owner re-reads and retries its leg marker when a stale write won the seq. */
const MARKER_ATTEMPTS = 5;

/** Entry kinds that are steps: the atomic units of progress. */
export const STEP_KINDS: ReadonlySet<EntryKind> = new Set(['model', 'tool', 'reconciled', 'compaction']);

/**
 * The leg's journal: the entries read at the start, the fold over them, and the one writer that
 * appends at the next seq. One journal write is in flight at a time: every caller awaits each.
 */
export class JournalWriter {
  #entries: JournalEntry[] = [];
  #view: SessionView = EMPTY_VIEW;
  #stepsThisLeg = 0;
  #progressed = false;
  #tokensThisLeg = 0;
  /** The leg's marker until it is journaled (on its own, or on the turn's input). */
  #marker: EntryDataOf<'leg'> | undefined;

  constructor(
    private readonly key: SessionKey,
    private readonly deps: RuntimeDeps,
    private readonly log: RuntimeLogger,
    private readonly signals: LegSignals,
    /** The agent's hard cap on one entry's payload (outcomes are exempt). */
    private readonly maxPayloadBytes: number | undefined,
  ) {}

  get entries(): readonly JournalEntry[] {
    return this.#entries;
  }

  get view(): SessionView {
    return this.#view;
  }

  /** Steps this leg journaled (model calls, tool results, reconciliations). */
  get stepsThisLeg(): number {
    return this.#stepsThisLeg;
  }

  /** Model tokens (input + output) of the steps this leg journaled, added to the session's count when it releases. */
  get tokensThisLeg(): number {
    return this.#tokensThisLeg;
  }

  /** Whether this leg appended anything past its marker: it clears the crash-loop counter. */
  get progressed(): boolean {
    return this.#progressed;
  }

  /**
   * Reads the journal (one pass: the transcript needs every entry) and folds it. No snapshot:
   * folding thousands of entries takes milliseconds, less than the request that would fetch one;
   * snapshots serve readers that skip the transcript (status, tasks). Throws CorruptStateError
   * when stored state fails validation, LeaseLostError when a newer owner has marked it.
   */
  async load(): Promise<void> {
    this.#entries = await this.deps.store.readJournal(this.key);
    // The store refuses formats newer than this build; a worker configured as an older build
    // (journalFormat) refuses what its own format does not cover, the same way.
    const understood = journalFormatOf(this.deps.config);
    for (const entry of this.#entries) assertReadableFormat(entry.seq, entry.v, understood);
    // A fork's history is its original's journal, older than its record by design.
    if (this.signals.record.forkedFrom === undefined) refuseRemnants(this.#entries, this.signals.record.createdAt);
    this.#view = foldJournal(this.#entries);
    // A leg paused between its acquire and this read may find a newer owner's marker already
    // there: its own marker would land after it, at a free seq, and fence nothing. It stops.
    if (this.#view.legEpoch > this.signals.epoch)
      throw new LeaseLostError(`a newer owner (epoch ${this.#view.legEpoch}) marked the journal first`);
  }

  /**
   * The first write of a new owner: once it lands, a stale owner's next append collides. It is
   * stamped with the turn the record says is active — the journal's last turn is the previous
   * one when this leg starts a new turn — so a per-turn stream shows the legs that ran it.
   */
  async appendLegMarker(owner: string, reason: KickReason, trace: TraceContext): Promise<void> {
    this.#marker = { owner, reason, traceparent: formatTraceparent(trace) };
    await this.markLeg();
  }

  /**
   * A leg that starts a turn: its marker rides on the turn's input, its first write (nothing of
   * the leg comes before it, so the input fences stale owners as the marker would). Any other
   * append, and `markLeg`, writes the marker on its own first.
   */
  deferLegMarker(owner: string, reason: KickReason, trace: TraceContext): void {
    this.#marker = { owner, reason, traceparent: formatTraceparent(trace) };
  }

  /** Writes a deferred marker now, on its own; nothing when it is written already. */
  async markLeg(): Promise<void> {
    const marker = this.#marker;
    if (!marker) return;
    for (let attempt = 1; ; attempt++) {
      try {
        const turnId = this.signals.record.activeTurnId ?? this.#view.turnId;
        await this.#put('leg', marker, turnId);
        this.#marker = undefined;
        return;
      } catch (error) {
        if (!(error instanceof SeqTakenError) || attempt >= MARKER_ATTEMPTS) throw error;
        await this.#readPastStaleWrite();
      }
    }
  }

  /**
   * A stale owner's last write won the seq this leg's marker went for: read what it wrote and go
   * after it — unless it was a newer owner's marker, and this leg has lost the session.
   */
  async #readPastStaleWrite(): Promise<void> {
    const newer = await this.deps.store.readJournal(this.key, this.#view.lastSeq);
    this.#entries.push(...newer);
    this.#view = foldJournal(newer, this.#view);
    if (this.#view.legEpoch > this.signals.epoch)
      throw new LeaseLostError(`a newer owner (epoch ${this.#view.legEpoch}) marked the journal first`);
  }

  /**
   * Appends at the next seq, under the current turn unless told otherwise. A deferred marker
   * rides on a turn's input, and is written on its own before any other entry.
   */
  async append<K extends EntryKind>(kind: K, data: EntryDataOf<K>, turnId = this.#view.turnId): Promise<void> {
    const marker = this.#marker;
    if (!marker) return this.#put(kind, data, turnId);
    if (kind !== 'input') {
      await this.markLeg();
      return this.#put(kind, data, turnId);
    }
    try {
      await this.#put(kind, data, turnId, marker);
      this.#marker = undefined;
    } catch (error) {
      if (!(error instanceof SeqTakenError)) throw error;
      // A stale owner's write took the seq. It may have been this very turn's input (an owner
      // of an older epoch starting it too): mark on its own, then journal the input if still due.
      await this.#readPastStaleWrite();
      await this.markLeg();
      if (this.#view.turnId !== turnId) await this.#put(kind, data, turnId);
    }
  }

  /** One journal write at the next seq; `marker` goes on an input that is its leg's first write. */
  async #put<K extends EntryKind>(
    kind: K,
    data: EntryDataOf<K>,
    turnId: string | undefined,
    marker?: EntryDataOf<'leg'>,
  ): Promise<void> {
    const format = journalFormatOf(this.deps.config);
    const entry = {
      seq: this.#view.lastSeq + 1,
      kind,
      epoch: this.signals.epoch,
      writeId: this.deps.ids.writeId(),
      at: this.deps.clock.now(),
      ...(turnId !== undefined ? { turnId } : {}),
      ...(format > 1 ? { v: format } : {}),
      data: marker ? { ...data, leg: marker } : data,
    } as JournalEntry;
    const bytes = Buffer.byteLength(JSON.stringify(data));
    const limit = this.maxPayloadBytes;
    if (limit !== undefined && bytes > limit && kind !== 'outcome') {
      // Name what made it (the tool, the model) and the limit an operator can raise.
      const tool = kind === 'tool' ? (data as { tool?: unknown }).tool : undefined;
      const what = typeof tool === 'string' ? `result of tool ${tool}` : `${kind} payload`;
      throw new PayloadTooLargeError(`${what} at seq ${entry.seq} (the agent's limits.maxPayloadBytes)`, bytes, limit);
    }
    const next = applyEntry(this.#view, entry);
    try {
      await this.deps.store.append(this.key, entry, itemTtlSeconds(this.deps.config, this.deps.clock.now()));
    } catch (error) {
      // Fencing and validation errors keep their meaning; anything else is the store's trouble.
      if (error instanceof BatonError) throw error;
      throw new InfrastructureError(`journal append of ${kind} at seq ${entry.seq}`, error);
    }
    this.#entries.push(entry);
    this.#view = next;
    this.deps.telemetry.metrics.bytes('BytesJournaled', bytes);
    if (STEP_KINDS.has(kind)) {
      this.#stepsThisLeg++;
      this.deps.telemetry.metrics.count('Steps');
    }
    if (entry.kind === 'model' || entry.kind === 'compaction')
      this.#tokensThisLeg += entry.data.usage.inputTokens + entry.data.usage.outputTokens;
    if (kind !== 'leg' && !this.#progressed) {
      this.#progressed = true;
      // A recovered leg clears the crash-loop counter as soon as it progresses: one killed
      // before its first renewal would otherwise count as a recovery without progress.
      if (this.signals.record.recoveries > 0) {
        await this.signals.renewNow().catch((error: unknown) => {
          if (error instanceof LeaseLostError) throw error;
        });
      }
    }
    this.log.debug('journaled', { seq: entry.seq, kind, bytes });
    await this.deps.failpoint('after-append');
  }
}

/** Far more than any clock skew between hosts, far less than a retention (a day at least). */
const REMNANT_MARGIN_MS = 3_600_000;

/**
 * A journal that began long before its session record was created belongs to an earlier run of
 * the same session id whose record expired (items outlive it by half a retention): resuming over
 * it would finish that run's turns a second time. Refused as stored state that cannot be used.
 */
function refuseRemnants(entries: readonly JournalEntry[], recordCreatedAt: number): void {
  const first = entries[0];
  if (first === undefined || first.at >= recordCreatedAt - REMNANT_MARGIN_MS) return;
  throw new CorruptStateError(
    `the journal began ${new Date(first.at).toISOString()}, before this session's record was created (${new Date(recordCreatedAt).toISOString()}): ` +
      'it is what is left of an earlier run of this session id, which expired; resend once it has expired too, or with a new ticket id',
  );
}
